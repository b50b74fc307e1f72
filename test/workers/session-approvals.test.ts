/**
 * Approval requests at the session object (a kind of pending request): decided by the policies
 * at once or put to a person, answered once by a writer of the project, denied at the deadline or
 * when the session ends, re-sent requests answered the same, and every decision an event.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type ApprovalRequest, DEFAULT_DENIAL_MESSAGE } from "../../protocol/approvals.js";
import type { CallerPrincipal } from "../../worker/src/auth/tokens.js";
import type { ApprovalSettings } from "../../worker/src/session/types.js";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { resultOf } from "./support/rpc-socket.js";
import { events, liveSession, respond, sessionStub } from "./support/session.js";
import { ADMIN, ADMIN_TOKEN, OTHER } from "./support/tokens.js";

afterEach(disconnectAll);

const SHELL_ASKS: ApprovalSettings = {
  policies: [
    {
      rules: [
        { kind: "shell", match: "rm -rf *", action: "deny" },
        { kind: "shell", match: "git push*", action: "ask" },
        { kind: "shell", action: "ask" },
      ],
      default: "allow",
    },
  ],
  timeoutMs: 60_000,
  denialMessage: "not approved",
};

const shell = (command: string): ApprovalRequest => ({
  kind: "shell",
  command,
  cwd: "/workspace/default",
  summary: `run ${command}`,
});

function answer(
  sessionId: string,
  requestId: string,
  decision: "allow" | "allow_session" | "deny",
  principal: CallerPrincipal = ADMIN,
  message?: string,
) {
  return sessionStub(sessionId).answerApproval({ principal, requestId, answer: decision, message });
}

async function eventsOf(sessionId: string, type: string) {
  return (await events(sessionId)).events.filter((e) => e.type === type);
}

describe("an approval request", () => {
  it("the policy's allow and deny decide at once, without asking anyone", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_allowedbypolicy", {
      kind: "edit",
      path: "/workspace/default/a.ts",
      summary: "edit a.ts",
    });
    expect(await s.tunnel.decision("apr_allowedbypolicy")).toEqual({
      decision: "allow",
      scope: "once",
      by: "policy",
    });
    s.tunnel.ask("apr_deniedbypolicy", shell("rm -rf /"));
    const denied = await s.tunnel.decision("apr_deniedbypolicy");
    expect(denied).toMatchObject({ decision: "deny", by: "policy" });
    expect(denied.message).toBe("not approved (denied by rule 1)");
    expect(await eventsOf(s.sessionId, "approval_request")).toEqual([]);
    expect(await eventsOf(s.sessionId, "approval_denied")).toEqual([
      expect.objectContaining({ request_id: "apr_deniedbypolicy", by: "policy", kind: "shell" }),
    ]);
  });

  it("asks: an approval_request event with the exact command, listed as pending, answered once", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_pushforce0001", shell("git push --force origin main"));
    const request = await s.owner.next("approval_request");
    expect(request).toMatchObject({
      request_id: "apr_pushforce0001",
      agent: "scripted",
      kind: "shell",
      command: "git push --force origin main",
      cwd: "/workspace/default",
      summary: "run git push --force origin main",
    });
    const pending = await s.stub.pending(ADMIN, null);
    expect(pending).toMatchObject({
      ok: true,
      value: {
        pending_approvals: 1,
        open_approvals: [expect.objectContaining({ request_id: "apr_pushforce0001" })],
      },
    });
    expect(await answer(s.sessionId, "apr_pushforce0001", "allow")).toEqual({
      ok: true,
      value: { request_id: "apr_pushforce0001", decision: "allow", scope: "once" },
    });
    expect(await s.tunnel.decision("apr_pushforce0001")).toEqual({
      decision: "allow",
      scope: "once",
      by: "answer",
    });
    const granted = await s.owner.next("approval_granted");
    expect(granted).toMatchObject({
      request_id: "apr_pushforce0001",
      by: "answer",
      answered_by: "admin",
      scope: "once",
    });
    // The first answer decided: a second one, from anyone, is refused.
    expect(await answer(s.sessionId, "apr_pushforce0001", "deny", OTHER)).toMatchObject({
      ok: false,
      error: { code: "already_answered" },
    });
    // A re-sent request (the host reconnected) gets the same decision, and no second event.
    s.tunnel.ask("apr_pushforce0001", shell("git push --force origin main"));
    await until(
      async () => s.tunnel.answers("apr_pushforce0001").length === 2,
      "the re-sent request is answered",
    );
    expect(await eventsOf(s.sessionId, "approval_request")).toHaveLength(1);
  });

  it("deny: the agent gets the person's message, or the project's denial message", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_denywithmsg01", shell("make deploy"));
    await s.owner.next("approval_request");
    await answer(s.sessionId, "apr_denywithmsg01", "deny", ADMIN, "not on a Friday");
    expect(await s.tunnel.decision("apr_denywithmsg01")).toEqual({
      decision: "deny",
      scope: "once",
      by: "answer",
      message: "not on a Friday",
    });
    s.tunnel.ask("apr_denynomsg0001", shell("make deploy"));
    await s.owner.next("approval_request");
    await answer(s.sessionId, "apr_denynomsg0001", "deny");
    expect(await s.tunnel.decision("apr_denynomsg0001")).toMatchObject({
      decision: "deny",
      message: "not approved",
    });
  });

  it("only a writer of the session's project may answer; unknown ids are a clear error", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_authority0001", shell("ls"));
    await s.owner.next("approval_request");
    const info = await s.stub.getInfo(ADMIN, null);
    const projectId = info.ok ? info.value.project_id : "";
    const readOnly: CallerPrincipal = { kind: "caller", tokenId: "ro", scopes: [`project:${projectId}:ro`] };
    const stranger: CallerPrincipal = {
      kind: "caller",
      tokenId: "st",
      scopes: ["project:prj_000000000000000000000000"],
    };
    const writer: CallerPrincipal = { kind: "caller", tokenId: "wr", scopes: [`project:${projectId}`] };
    for (const principal of [readOnly, stranger]) {
      const refused = await answer(s.sessionId, "apr_authority0001", "allow", principal);
      expect(refused.ok).toBe(false);
    }
    expect(await answer(s.sessionId, "apr_nosuchrequest", "allow")).toMatchObject({
      ok: false,
      error: { code: "unknown_request" },
    });
    // A writer who does not own the session may answer (approvals are not the owner's alone).
    expect((await answer(s.sessionId, "apr_authority0001", "allow", writer)).ok).toBe(true);
    expect(await s.tunnel.decision("apr_authority0001")).toMatchObject({ decision: "allow" });
  });

  it("allow_session allows the kind and pattern that asked from then on; a rule's deny still holds", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_pushsession01", shell("git push origin a"));
    await s.owner.next("approval_request");
    await answer(s.sessionId, "apr_pushsession01", "allow_session");
    expect(await s.tunnel.decision("apr_pushsession01")).toMatchObject({
      decision: "allow",
      scope: "session",
    });
    s.tunnel.ask("apr_pushsession02", shell("git push origin b"));
    expect(await s.tunnel.decision("apr_pushsession02")).toMatchObject({
      decision: "allow",
      by: "session_allowance",
    });
    // The allowance is the rule's pattern (git push*), not every shell command.
    s.tunnel.ask("apr_otherstillask", shell("npm install left-pad"));
    await until(
      async () => (await eventsOf(s.sessionId, "approval_request")).length === 2,
      "a second request",
    );
    s.tunnel.ask("apr_rmstilldenied", shell("rm -rf /tmp/x"));
    expect(await s.tunnel.decision("apr_rmstilldenied")).toMatchObject({ decision: "deny", by: "policy" });
    const info = await s.stub.getInfo(ADMIN, null);
    expect(info.ok && info.value.session_allowances).toEqual([{ kind: "shell", match: "git push*" }]);
  });

  it("no answer by the deadline: denied, approval_expired, and a late answer is refused", async () => {
    const s = await liveSession({ approvals: { ...SHELL_ASKS, timeoutMs: 1_000 } });
    s.tunnel.ask("apr_expires000001", shell("sleep 1"));
    await s.owner.next("approval_request");
    const decision = await s.tunnel.decision("apr_expires000001", 10_000);
    expect(decision).toMatchObject({ decision: "deny", by: "timeout" });
    expect(decision.message).toContain("nobody answered within 1 s");
    await s.owner.next("approval_expired");
    expect(await answer(s.sessionId, "apr_expires000001", "allow")).toMatchObject({
      ok: false,
      error: { code: "request_expired" },
    });
  });

  it("the session's end denies what waits; the host's cancellation denies without an answer", async () => {
    const s = await liveSession({ approvals: SHELL_ASKS });
    s.tunnel.ask("apr_cancelled0001", shell("ls"));
    await s.owner.next("approval_request");
    s.tunnel.cancel("apr_cancelled0001", "the agent restarted");
    const cancelled = await s.owner.next("approval_denied");
    expect(cancelled).toMatchObject({
      request_id: "apr_cancelled0001",
      by: "ended",
      message: "the agent restarted",
    });
    s.tunnel.ask("apr_endedsession1", shell("ls"));
    await s.owner.next("approval_request");
    await s.stub.end(ADMIN, "done here");
    expect(await s.tunnel.decision("apr_endedsession1")).toMatchObject({ decision: "deny", by: "ended" });
  });

  it("many waiting at once: past the bound, new ones are denied at once", async () => {
    const s = await liveSession({ approvals: { ...SHELL_ASKS, policies: ["ask"] } });
    for (let i = 0; i < 32; i++) s.tunnel.ask(`apr_flood${String(i).padStart(8, "0")}`, shell(`echo ${i}`));
    await until(async () => (await eventsOf(s.sessionId, "approval_request")).length === 32, "32 requests");
    s.tunnel.ask("apr_oneover00000", shell("echo over"));
    expect(await s.tunnel.decision("apr_oneover00000")).toMatchObject({ decision: "deny", by: "error" });
  });
});

describe("approval settings through the tools", () => {
  it("project create names the bad rule; config_limits and project get show the policy", async () => {
    const mcp = await initialize(ADMIN_TOKEN);
    const bad = await callTool(mcp, "project", {
      action: "create",
      name: `bad-${crypto.randomUUID().slice(0, 8)}`,
      approval_policy: {
        rules: [
          { kind: "shell", action: "ask" },
          { kind: "shel", action: "ask" },
        ],
      },
    });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]?.text).toContain("approval_policy.rules.1.kind");
    const policy = { rules: [{ kind: "shell", match: "git push*", action: "ask" }], default: "allow" };
    const projectId = await createProject({ approval_policy: policy, approval_timeout_seconds: 120 });
    const limits = await callTool(mcp, "config_limits", { project_id: projectId });
    expect(limits.structuredContent).toMatchObject({
      approvals: { policy, timeout_seconds: 120, denial_message: DEFAULT_DENIAL_MESSAGE },
    });
    const options = await callTool(mcp, "project", { action: "options" });
    expect(options.structuredContent).toMatchObject({ approvals: { default_policy: "auto" } });
  });
});

describe("a caller tool call under an approval policy", () => {
  const GATED: ApprovalSettings = {
    policies: [
      {
        rules: [
          { kind: "mcp_tool", match: "ant_send_*", action: "ask" },
          { kind: "mcp_tool", match: "ant_forbidden", action: "deny" },
        ],
        default: "allow",
      },
    ],
    timeoutMs: 60_000,
    denialMessage: "not approved",
  };

  it("waits for approval before the caller sees it; allowed, it goes on to the caller", async () => {
    const s = await liveSession({ approvals: GATED });
    s.tunnel.call("call-gated-1", "send_response", { text: "hi" });
    const asked = await s.owner.next("approval_request");
    expect(asked).toMatchObject({ kind: "mcp_tool", tool: "ant_send_response", arguments: { text: "hi" } });
    expect(await eventsOf(s.sessionId, "caller_tool_request")).toEqual([]);
    // A re-sent call (the host reconnected) still waits on the same question.
    s.tunnel.call("call-gated-1", "send_response", { text: "hi" });
    await answer(s.sessionId, asked.request_id, "allow");
    const request = await s.owner.next("caller_tool_request");
    expect(request).toMatchObject({ request_id: "call-gated-1", tool: "send_response" });
    await respond(s.sessionId, "call-gated-1", { result: "sent" });
    expect(await s.tunnel.result("call-gated-1")).toEqual({ ok: true, result: "sent" });
    expect(await eventsOf(s.sessionId, "approval_request")).toHaveLength(1);
  });

  it("denied, it fails with reason denied and never reaches the caller", async () => {
    const s = await liveSession({ approvals: GATED });
    s.tunnel.call("call-gated-2", "send_response", {});
    const asked = await s.owner.next("approval_request");
    await answer(s.sessionId, asked.request_id, "deny", ADMIN, "no mail today");
    const outcome = await s.tunnel.result("call-gated-2");
    expect(outcome).toMatchObject({ ok: false, error: { reason: "denied" } });
    expect(outcome.ok ? "" : outcome.error.message).toContain("no mail today");
    expect(await eventsOf(s.sessionId, "caller_tool_request")).toEqual([]);
  });

  it("a rule's deny refuses at once; a tool the policy allows goes straight to the caller", async () => {
    const s = await liveSession({
      approvals: GATED,
      caller: { callerId: "ant", tools: [{ name: "forbidden" }, { name: "lookup" }] },
    });
    s.tunnel.call("call-forbidden", "forbidden", {});
    expect(await s.tunnel.result("call-forbidden")).toMatchObject({ ok: false, error: { reason: "denied" } });
    s.tunnel.call("call-lookup", "lookup", {});
    expect(await s.owner.next("caller_tool_request")).toMatchObject({ request_id: "call-lookup" });
    expect(await eventsOf(s.sessionId, "approval_request")).toEqual([]);
  });

  it("a call the droid cancels while its question waits ends the question", async () => {
    const s = await liveSession({ approvals: GATED });
    s.tunnel.call("call-gated-3", "send_response", {});
    const asked = await s.owner.next("approval_request");
    s.tunnel.cancel("call-gated-3", "the droid gave up");
    expect(await s.owner.next("approval_denied")).toMatchObject({
      request_id: asked.request_id,
      by: "ended",
    });
    expect(await answer(s.sessionId, asked.request_id, "allow")).toMatchObject({ ok: false });
    expect(await eventsOf(s.sessionId, "caller_tool_request")).toEqual([]);
  });
});

describe("a droid's call of Oubliette's tools under an approval policy", () => {
  const TOOLS_ASK: ApprovalSettings = {
    policies: [
      {
        rules: [
          { kind: "mcp_tool", match: "oubliette_workspace", action: "ask" },
          { kind: "mcp_tool", match: "oubliette_token", action: "deny" },
        ],
        default: "allow",
      },
    ],
    timeoutMs: 60_000,
    denialMessage: "not approved",
  };

  async function oublietteCall(
    s: Awaited<ReturnType<typeof liveSession>>,
    tool: string,
    args: Record<string, unknown>,
  ) {
    return s.tunnel.socket.ask(
      "oubliette_call_tool",
      { api_key: ADMIN_TOKEN, tool, arguments: args },
      30_000,
    );
  }

  it("waits for a person before it runs; denied, the droid gets the tool's error and it never runs", async () => {
    const s = await liveSession({ approvals: TOOLS_ASK });
    const info = await s.stub.getInfo(ADMIN, null);
    const projectId = info.ok ? info.value.project_id : "";
    const call = oublietteCall(s, "workspace", { action: "list", project_id: projectId });
    const asked = await s.owner.next("approval_request");
    expect(asked).toMatchObject({
      kind: "mcp_tool",
      tool: "oubliette_workspace",
      arguments: { action: "list" },
    });
    await answer(s.sessionId, asked.request_id, "deny", ADMIN, "not now");
    const refused = resultOf(await call) as { isError?: boolean; content: { text: string }[] };
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toContain("not now");
    // A rule's deny: refused at once, without a question.
    const token = resultOf(await oublietteCall(s, "token", { action: "list" })) as { isError?: boolean };
    expect(token.isError).toBe(true);
    expect(await eventsOf(s.sessionId, "approval_request")).toHaveLength(1);
  });

  it("allowed, the tool runs and the droid gets its result", async () => {
    const projectId = await createProject();
    const s = await liveSession({ approvals: TOOLS_ASK, projectId });
    const call = oublietteCall(s, "workspace", { action: "list", project_id: projectId });
    const asked = await s.owner.next("approval_request");
    await answer(s.sessionId, asked.request_id, "allow");
    const listed = resultOf(await call) as { isError?: boolean; content: { text: string }[] };
    expect(listed.isError, listed.content[0]?.text).toBeFalsy();
    expect(listed.content[0]?.text).toContain("default");
  });
});
