/**
 * Approval requests put to a stateless (2026-07-28) caller's human: a `session events|pending|get`
 * call from a client that declared `elicitation`, while approvals wait that its token may answer,
 * is answered with an input-required round (SEP-2322) of one `elicitation/create` form per
 * approval. The retry with `inputResponses` and the `requestState` applies the answers with the
 * call's token (accept with a decision, decline as a deny; cancel answers nothing) and then runs
 * the call as usual, without asking again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ApprovalRequest } from "../../protocol/approvals.js";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { ASK_BEFORE_PUSH, PUSH } from "./support/approvals.js";
import { disconnectAll } from "./support/fake-host.js";
import { modernRpc } from "./support/modern.js";
import { liveSession } from "./support/session.js";
import { ADMIN, READER_TOKEN } from "./support/tokens.js";

afterEach(async () => {
  await disconnectAll();
});

const ELICIT = { elicitation: {} };
/** The clientInfo name support/modern.ts sends. */
const CLIENT = "workers-test";

const FormSchema = z.object({
  method: z.literal("elicitation/create"),
  params: z.object({
    mode: z.literal("form"),
    message: z.string(),
    requestedSchema: z.object({
      type: z.literal("object"),
      properties: z.object({
        decision: z.object({
          type: z.literal("string"),
          oneOf: z.array(z.looseObject({ const: z.string() })),
        }),
        message: z.looseObject({ type: z.literal("string") }),
      }),
      required: z.array(z.string()),
    }),
  }),
});

const RoundSchema = z.object({
  resultType: z.literal("input_required"),
  inputRequests: z.record(z.string(), FormSchema),
  requestState: z.string().min(16),
});

const EventsPageSchema = z.object({
  resultType: z.literal("complete"),
  structuredContent: z.object({
    events: z.array(z.looseObject({ type: z.string(), index: z.number() })),
    next_index: z.number(),
    status: z.string(),
  }),
});

interface CallOptions {
  capabilities?: Record<string, unknown>;
  token?: string;
  action?: "events" | "pending" | "get";
  args?: Record<string, unknown>;
}

/** A stateless `session <action>` call (events by default); `extra` params carry inputResponses / requestState. */
function follow(sessionId: string, extra: Record<string, unknown> = {}, options: CallOptions = {}) {
  return modernRpc(
    "tools/call",
    {
      name: "session",
      arguments: { action: options.action ?? "events", session_id: sessionId, ...options.args },
      ...extra,
    },
    { capabilities: options.capabilities ?? ELICIT, ...(options.token ? { token: options.token } : {}) },
  );
}

/** A live session (owned by the admin token) asking per ASK_BEFORE_PUSH. */
function approvalSession() {
  return liveSession({ approvals: ASK_BEFORE_PUSH });
}

type Session = Awaited<ReturnType<typeof approvalSession>>;

/** The agent asks `id`; resolves once the session has put it to a person. */
async function asked(s: Session, id: string, request: ApprovalRequest = PUSH) {
  s.tunnel.ask(id, request);
  await s.owner.next("approval_request", (e) => e.request_id === id);
}

async function waitingApprovals(s: Session): Promise<string[]> {
  const pending = await s.stub.pending(ADMIN, null);
  if (!pending.ok) throw new Error(pending.error.message);
  return pending.value.open_approvals.map((a) => a.request_id).sort();
}

/** The round a call answered, asserted to be one. */
async function roundOf(answer: ReturnType<typeof follow>) {
  return RoundSchema.parse((await answer).result);
}

describe("an approval-asking round for a stateless caller following a session", () => {
  it("session events from a client declaring elicitation, while an approval waits: input_required with the 2025 form keyed by the approval", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundasked001");
    const answer = await follow(s.sessionId, {}, { args: { wait_seconds: 30 } });
    const round = RoundSchema.parse(answer.result);
    expect(Object.keys(round.inputRequests)).toEqual(["approval:apr_roundasked001"]);
    const form = round.inputRequests["approval:apr_roundasked001"];
    expect(form?.params.message).toContain("git push --force origin main");
    expect(form?.params.message).toContain("/workspace/default");
    expect(form?.params.message).toContain(`Oubliette session ${s.sessionId}`);
    expect(form?.params.message).toMatch(/Decide by \d{4}-\d{2}-\d{2}T/);
    expect(form?.params.requestedSchema.required).toEqual(["decision"]);
    expect(form?.params.requestedSchema.properties.decision.oneOf.map((c) => c.const)).toEqual([
      "allow",
      "allow_session",
      "deny",
    ]);
    // No caching hints on an input-required result; nothing decided yet.
    expect(answer.result).not.toHaveProperty("ttlMs");
    expect(await waitingApprovals(s)).toEqual(["apr_roundasked001"]);
  });

  it.each(["pending", "get"] as const)("session %s asks the same way", async (action) => {
    const s = await approvalSession();
    await asked(s, "apr_roundaction01");
    const round = await roundOf(follow(s.sessionId, {}, { action }));
    expect(Object.keys(round.inputRequests)).toEqual(["approval:apr_roundaction01"]);
  });

  it("accept with decision allow: the agent is allowed by answer, the events page comes back, the answer is audited", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundallow001");
    const round = await roundOf(follow(s.sessionId));
    const done = await follow(s.sessionId, {
      inputResponses: { "approval:apr_roundallow001": { action: "accept", content: { decision: "allow" } } },
      requestState: round.requestState,
    });
    const page = EventsPageSchema.parse(done.result).structuredContent;
    expect(page.events.map((e) => e.type)).toContain("approval_request");
    // Answered before the call ran: its decision is already in the page.
    expect(page.events).toContainEqual(
      expect.objectContaining({
        type: "approval_granted",
        request_id: "apr_roundallow001",
        answered_by: "admin",
      }),
    );
    expect(await s.tunnel.decision("apr_roundallow001")).toEqual({
      decision: "allow",
      scope: "once",
      by: "answer",
    });
    const audit = await modernRpc("tools/call", {
      name: "audit",
      arguments: { action_prefix: "elicitation approval_response" },
    });
    const entries = z
      .object({ entries: z.array(z.unknown()) })
      .parse(audit.result?.structuredContent).entries;
    expect(entries).toContainEqual(
      expect.objectContaining({
        token_id: "admin",
        action: "elicitation approval_response allow",
        target: `${s.sessionId}/apr_roundallow001`,
        outcome: "ok",
      }),
    );
  });

  it("decline: the agent is denied, told it was declined in the client; the call runs", async () => {
    const s = await approvalSession();
    await asked(s, "apr_rounddecline1");
    const round = await roundOf(follow(s.sessionId));
    const done = await follow(s.sessionId, {
      inputResponses: { "approval:apr_rounddecline1": { action: "decline" } },
      requestState: round.requestState,
    });
    EventsPageSchema.parse(done.result);
    expect(await s.tunnel.decision("apr_rounddecline1")).toEqual({
      decision: "deny",
      scope: "once",
      by: "answer",
      message: `declined in ${CLIENT}`,
    });
    expect(await s.owner.next("approval_denied")).toMatchObject({ by: "answer", answered_by: "admin" });
  });

  it("cancel: the approval still waits, and the call runs without asking again", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundcancel01");
    const round = await roundOf(follow(s.sessionId));
    const done = await follow(s.sessionId, {
      inputResponses: { "approval:apr_roundcancel01": { action: "cancel" } },
      requestState: round.requestState,
    });
    EventsPageSchema.parse(done.result);
    expect(s.tunnel.answers("apr_roundcancel01")).toEqual([]);
    expect(await waitingApprovals(s)).toEqual(["apr_roundcancel01"]);
    // The next call (a new request, no state) asks again.
    const again = await roundOf(follow(s.sessionId));
    expect(Object.keys(again.inputRequests)).toEqual(["approval:apr_roundcancel01"]);
  });

  it("the retry runs the call even with no answer at all, and answers nothing", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundnoanswr1");
    const round = await roundOf(follow(s.sessionId));
    EventsPageSchema.parse((await follow(s.sessionId, { requestState: round.requestState })).result);
    expect(await waitingApprovals(s)).toEqual(["apr_roundnoanswr1"]);
  });

  it("asks about at most 5, and the rest at the next call; an answer to a form not asked is ignored", async () => {
    const s = await approvalSession();
    const ids = [1, 2, 3, 4, 5, 6].map((n) => `apr_roundmany000${n}`);
    for (const id of ids) await asked(s, id);
    const round = await roundOf(follow(s.sessionId));
    const keys = Object.keys(round.inputRequests);
    expect(keys).toHaveLength(5);
    const [left] = ids.filter((id) => !keys.includes(`approval:${id}`));
    if (left === undefined) throw new Error("every approval was asked");
    const allow = { action: "accept", content: { decision: "allow" } };
    const inputResponses = Object.fromEntries([...keys, `approval:${left}`].map((key) => [key, allow]));
    EventsPageSchema.parse(
      (await follow(s.sessionId, { inputResponses, requestState: round.requestState })).result,
    );
    // The five asked are allowed; the one not asked still waits, and is asked next.
    expect(await waitingApprovals(s)).toEqual([left]);
    const next = await roundOf(follow(s.sessionId));
    expect(Object.keys(next.inputRequests)).toEqual([`approval:${left}`]);
  });

  it("an answer the session refuses (already decided) is not fatal: the call runs", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundlate0001");
    const round = await roundOf(follow(s.sessionId));
    const first = await s.stub.answerApproval({
      principal: ADMIN,
      requestId: "apr_roundlate0001",
      answer: "deny",
    });
    expect(first.ok).toBe(true);
    const done = await follow(s.sessionId, {
      inputResponses: { "approval:apr_roundlate0001": { action: "accept", content: { decision: "allow" } } },
      requestState: round.requestState,
    });
    EventsPageSchema.parse(done.result);
    expect(await s.tunnel.decision("apr_roundlate0001")).toMatchObject({ decision: "deny", by: "answer" });
  });
});

describe("calls that get no round", () => {
  it("a client without elicitation gets the events page; the approval still waits", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundnoelicit");
    const done = await follow(s.sessionId, {}, { capabilities: {} });
    const page = EventsPageSchema.parse(done.result).structuredContent;
    expect(page.events).toContainEqual(
      expect.objectContaining({ type: "approval_request", request_id: "apr_roundnoelicit" }),
    );
    expect(await waitingApprovals(s)).toEqual(["apr_roundnoelicit"]);
  });

  it("a client that can elicit only by URL is not asked", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundurlonly1");
    EventsPageSchema.parse(
      (await follow(s.sessionId, {}, { capabilities: { elicitation: { url: {} } } })).result,
    );
  });

  it("a read-only token, which may not answer, gets the events page", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundreader01");
    const done = await follow(s.sessionId, {}, { token: READER_TOKEN });
    EventsPageSchema.parse(done.result);
    expect(await waitingApprovals(s)).toEqual(["apr_roundreader01"]);
  });

  it("no approval waiting: the events page", async () => {
    const s = await approvalSession();
    EventsPageSchema.parse((await follow(s.sessionId)).result);
  });
});

describe("requestState is attacker-controlled input", () => {
  const refused = (answer: Awaited<ReturnType<typeof follow>>) => {
    expect(answer.error).toMatchObject({
      code: McpErrorCode.invalidParams,
      message: "Invalid or expired requestState",
      data: { reason: "invalid_request_state" },
    });
  };
  const allow = { "approval:apr_roundtamper01": { action: "accept", content: { decision: "allow" } } };

  it("a tampered state is refused with -32602, and answers nothing", async () => {
    const s = await approvalSession();
    await asked(s, "apr_roundtamper01");
    const round = await roundOf(follow(s.sessionId));
    refused(
      await follow(s.sessionId, { inputResponses: allow, requestState: `${round.requestState}-TAMPERED` }),
    );
    refused(await follow(s.sessionId, { inputResponses: allow, requestState: 42 }));
    // Minted for other arguments (another since_index).
    refused(
      await follow(
        s.sessionId,
        { inputResponses: allow, requestState: round.requestState },
        { args: { since_index: 1 } },
      ),
    );
    expect(await waitingApprovals(s)).toEqual(["apr_roundtamper01"]);
  });
});
