/**
 * Approval requests put to a 2025-era MCP client's human natively: a client that declared
 * `elicitation` at `initialize` gets `elicitation/create` for each approval request on its event
 * stream; its response answers the approval with its token (accept with a decision, decline as a
 * deny; cancel leaves it waiting); a decision made elsewhere withdraws the dialog with
 * `notifications/cancelled`, and a late answer changes nothing.
 */
import { CancelledNotificationSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { ASK_BEFORE_PUSH, PUSH } from "./support/approvals.js";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, mcpFetch } from "./support/mcp.js";
import { events, liveSession } from "./support/session.js";
import { SseReader } from "./support/sse.js";
import { ADMIN, ADMIN_TOKEN, READER, READER_TOKEN } from "./support/tokens.js";

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const CLIENT = "approver-app";

interface ClientOptions {
  capabilities?: Record<string, unknown>;
  protocolVersion?: string;
  token?: string;
}

/** An initialized 2025-era MCP session with its GET stream open. */
async function client(options: ClientOptions = {}) {
  const token = options.token ?? ADMIN_TOKEN;
  const protocolVersion = options.protocolVersion ?? "2025-11-25";
  const init = await mcpFetch({
    token,
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion,
        capabilities: options.capabilities ?? { elicitation: {} },
        clientInfo: { name: CLIENT, version: "1" },
      },
    },
  });
  const mcp = init.headers.get("mcp-session-id");
  if (init.status !== 200 || !mcp) throw new Error(`initialize failed: ${init.status}`);
  const headers = { "mcp-protocol-version": protocolVersion };
  await mcpFetch({
    token,
    session: mcp,
    headers,
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
  });
  const stream = await openStream(mcp, token, headers);
  /** POSTs a JSON-RPC response of the client; returns the HTTP status. */
  const reply = async (body: Record<string, unknown>) => {
    const res = await mcpFetch({ token, session: mcp, headers, body: { jsonrpc: "2.0", ...body } });
    await res.body?.cancel();
    return res.status;
  };
  return { mcp, stream, reply, token };
}

async function openStream(mcp: string, token: string, headers: Record<string, string>) {
  const res = await mcpFetch({ method: "GET", session: mcp, token, headers });
  expect(res.status).toBe(200);
  const stream = new SseReader(res.body);
  readers.push(stream);
  return stream;
}

/** A live session asking per ASK_BEFORE_PUSH, owned by `principal`, whose events go to MCP session `mcp`. */
function approvalSession(mcp: string, owner = ADMIN) {
  return liveSession({ approvals: ASK_BEFORE_PUSH, owner, via: { mcpSessionId: mcp, streaming: true } });
}

type Message = Record<string, unknown> & { method?: string; id?: unknown; params?: Record<string, unknown> };

const isMethod = (method: string) => (value: unknown) => (value as Message).method === method;

/** The next stream message with `method` (and `where`), its event id and the message. */
async function nextMessage(stream: SseReader, method: string, where: (m: Message) => boolean = () => true) {
  const { id, value } = await stream.nextJson((v) => isMethod(method)(v) && where(v as Message), 5_000);
  return { eventId: id, message: value as Message };
}

/** The session event a `notifications/message` carries (empty for another message). */
function eventOf(m: Message): { type?: string; request_id?: string } {
  const data = m.params?.data;
  return typeof data === "object" && data !== null ? data : {};
}

const approvalNotice = (requestId: string) => (m: Message) =>
  eventOf(m).request_id === requestId && eventOf(m).type === "approval_request";

/**
 * Waits until everything delivered to the client so far has been read: a request the policy
 * allows at once is decided with an event, whose notification comes after all earlier messages.
 */
async function drain(c: Awaited<ReturnType<typeof client>>, s: Awaited<ReturnType<typeof approvalSession>>) {
  const id = `apr_drain${crypto.randomUUID().slice(0, 8)}`;
  s.tunnel.ask(id, { kind: "edit", path: "/workspace/default/a.ts", summary: "edit a.ts" });
  await nextMessage(c.stream, "notifications/message", (m) => eventOf(m).request_id === id);
}

/** The methods of every message the client's stream carried. */
function methodsSeen(stream: SseReader): unknown[] {
  return stream.all.map((e) => (e.data === "" ? null : (JSON.parse(e.data) as Message).method));
}

async function waitingApprovals(s: Awaited<ReturnType<typeof approvalSession>>) {
  const pending = await s.stub.pending(ADMIN, null);
  if (!pending.ok) throw new Error(pending.error.message);
  return pending.value.open_approvals.map((a) => a.request_id);
}

describe("approval requests as MCP elicitations", () => {
  it("a client that declared elicitation gets elicitation/create for the approval, after its notification, kept for Last-Event-ID", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitasked01", PUSH);
    const notice = await nextMessage(c.stream, "notifications/message", approvalNotice("apr_elicitasked01"));
    const { eventId, message } = await nextMessage(c.stream, "elicitation/create");
    expect(Number(eventId)).toBeGreaterThan(Number(notice.eventId));
    const request = ElicitRequestSchema.parse(message);
    expect(message.id).toBe(`approval:${s.sessionId}:apr_elicitasked01`);
    const params = request.params as {
      mode?: string;
      message: string;
      requestedSchema: { properties: Record<string, Record<string, unknown>>; required?: string[] };
    };
    expect(params.mode).toBe("form");
    expect(params.message).toContain("git push --force origin main");
    expect(params.message).toContain("/workspace/default");
    expect(params.message).toContain("Agent scripted");
    expect(params.message).toMatch(/Decide by \d{4}-\d{2}-\d{2}T/);
    expect(params.requestedSchema.required).toEqual(["decision"]);
    expect(params.requestedSchema.properties.decision).toMatchObject({
      type: "string",
      oneOf: [
        { const: "allow", title: expect.any(String) },
        { const: "allow_session", title: expect.any(String) },
        { const: "deny", title: expect.any(String) },
      ],
    });
    expect(params.requestedSchema.properties.message).toMatchObject({ type: "string" });
    // A client that reconnects after the notification gets the elicitation again.
    const resumed = await openStream(c.mcp, c.token, {
      "mcp-protocol-version": "2025-11-25",
      "last-event-id": String(notice.eventId),
    });
    const replayed = await nextMessage(resumed, "elicitation/create");
    expect(replayed.message.id).toBe(message.id);
    expect(replayed.eventId).toBe(eventId);
  });

  it("a 2025-06-18 client gets the decision as enum with enumNames", async () => {
    const c = await client({ protocolVersion: "2025-06-18" });
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitlegacy1", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    const params = ElicitRequestSchema.parse(message).params as Record<string, unknown> & {
      requestedSchema: { properties: Record<string, unknown> };
    };
    expect(params.mode).toBeUndefined();
    expect(params.requestedSchema.properties.decision).toMatchObject({
      type: "string",
      enum: ["allow", "allow_session", "deny"],
      enumNames: [expect.any(String), expect.any(String), expect.any(String)],
    });
  });

  it("accept with decision allow: the agent is allowed by answer, approval_granted answered_by the token", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitallow01", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    expect(
      await c.reply({ id: message.id, result: { action: "accept", content: { decision: "allow" } } }),
    ).toBe(202);
    expect(await s.tunnel.decision("apr_elicitallow01")).toEqual({
      decision: "allow",
      scope: "once",
      by: "answer",
    });
    expect(await s.owner.next("approval_granted")).toMatchObject({
      request_id: "apr_elicitallow01",
      by: "answer",
      answered_by: "admin",
    });
    // Answered by this client: nothing to withdraw.
    await drain(c, s);
    expect(methodsSeen(c.stream)).not.toContain("notifications/cancelled");
    // In the audit log with the token that decided.
    const listed = await callTool(c.mcp, "audit", { action_prefix: "elicitation approval_response" });
    const entries = (listed.structuredContent as { entries: Record<string, unknown>[] }).entries;
    expect(entries).toContainEqual(
      expect.objectContaining({
        token_id: "admin",
        action: "elicitation approval_response allow",
        target: `${s.sessionId}/apr_elicitallow01`,
        outcome: "ok",
      }),
    );
  });

  it("decline: the agent is denied, told it was declined in the client", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitdecline", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    expect(await c.reply({ id: message.id, result: { action: "decline" } })).toBe(202);
    expect(await s.tunnel.decision("apr_elicitdecline")).toEqual({
      decision: "deny",
      scope: "once",
      by: "answer",
      message: `declined in ${CLIENT}`,
    });
    expect(await s.owner.next("approval_denied")).toMatchObject({ by: "answer", answered_by: "admin" });
  });

  it("accept with decision deny and a message: the agent gets that message", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitdenymsg", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    const content = { decision: "deny", message: "open a pull request instead" };
    expect(await c.reply({ id: message.id, result: { action: "accept", content } })).toBe(202);
    expect(await s.tunnel.decision("apr_elicitdenymsg")).toMatchObject({
      decision: "deny",
      message: "open a pull request instead",
    });
  });

  it("cancel (or an error response) leaves the approval waiting, answerable with approval_response", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitcancel1", PUSH);
    s.tunnel.ask("apr_elicitfailed1", { ...PUSH, command: "git push origin other" });
    const first = await nextMessage(c.stream, "elicitation/create", (m) =>
      String(m.id).endsWith("apr_elicitcancel1"),
    );
    const second = await nextMessage(c.stream, "elicitation/create", (m) =>
      String(m.id).endsWith("apr_elicitfailed1"),
    );
    expect(await c.reply({ id: first.message.id, result: { action: "cancel" } })).toBe(202);
    expect(await c.reply({ id: second.message.id, error: { code: -32603, message: "dialog crashed" } })).toBe(
      202,
    );
    await s.tunnel.barrier();
    expect(s.tunnel.answers("apr_elicitcancel1")).toEqual([]);
    expect(s.tunnel.answers("apr_elicitfailed1")).toEqual([]);
    expect((await waitingApprovals(s)).sort()).toEqual(["apr_elicitcancel1", "apr_elicitfailed1"]);
    const answered = await callTool(c.mcp, "approval_response", {
      session_id: s.sessionId,
      request_id: "apr_elicitcancel1",
      decision: "allow",
    });
    expect(answered.isError).toBeUndefined();
    expect(await s.tunnel.decision("apr_elicitcancel1")).toMatchObject({ decision: "allow", by: "answer" });
  });

  it("decided by approval_response first: the client gets notifications/cancelled, and its late accept changes nothing", async () => {
    const c = await client();
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_elicitraced01", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    const denied = await callTool(c.mcp, "approval_response", {
      session_id: s.sessionId,
      request_id: "apr_elicitraced01",
      decision: "deny",
      message: "no",
    });
    expect(denied.isError).toBeUndefined();
    const cancelled = await nextMessage(c.stream, "notifications/cancelled");
    const params = CancelledNotificationSchema.parse(cancelled.message).params;
    expect(params.requestId).toBe(message.id);
    expect(params.reason).toBe("already decided: denied (answered by admin)");
    // The late answer is taken (202) and ignored: the agent keeps the first decision.
    expect(
      await c.reply({ id: message.id, result: { action: "accept", content: { decision: "allow" } } }),
    ).toBe(202);
    await s.tunnel.barrier();
    expect(s.tunnel.answers("apr_elicitraced01")).toHaveLength(1);
    expect(await s.tunnel.decision("apr_elicitraced01")).toMatchObject({ decision: "deny", message: "no" });
    const decisions = (await events(s.sessionId)).events.filter((e) => e.type.startsWith("approval_"));
    expect(decisions.map((e) => e.type)).toEqual(["approval_request", "approval_denied"]);
    // A response to an id this server never asked is taken too.
    expect(
      await c.reply({ id: "approval:ses_nosuch:apr_nosuchrequest", result: { action: "decline" } }),
    ).toBe(202);
  });

  it("a client that did not declare elicitation gets the notification but no elicitation/create", async () => {
    const c = await client({ capabilities: {} });
    const s = await approvalSession(c.mcp);
    s.tunnel.ask("apr_noelicitation", PUSH);
    await nextMessage(c.stream, "notifications/message", approvalNotice("apr_noelicitation"));
    await callTool(c.mcp, "approval_response", {
      session_id: s.sessionId,
      request_id: "apr_noelicitation",
      decision: "allow",
    });
    expect(await s.tunnel.decision("apr_noelicitation")).toMatchObject({ decision: "allow" });
    await drain(c, s);
    const methods = methodsSeen(c.stream);
    expect(methods).toContain("notifications/message");
    expect(methods).not.toContain("elicitation/create");
    expect(methods).not.toContain("notifications/cancelled");
  });

  it("a read-only token's MCP session that accepts cannot allow: the approval stays pending", async () => {
    const c = await client({ token: READER_TOKEN });
    const s = await approvalSession(c.mcp, READER);
    s.tunnel.ask("apr_elicitreader1", PUSH);
    const { message } = await nextMessage(c.stream, "elicitation/create");
    expect(
      await c.reply({ id: message.id, result: { action: "accept", content: { decision: "allow" } } }),
    ).toBe(202);
    await s.tunnel.barrier();
    expect(s.tunnel.answers("apr_elicitreader1")).toEqual([]);
    expect(await waitingApprovals(s)).toEqual(["apr_elicitreader1"]);
    const decisions = (await events(s.sessionId)).events.filter(
      (e) => e.type === "approval_granted" || e.type === "approval_denied",
    );
    expect(decisions).toEqual([]);
  });
});
