/**
 * Approvals end to end: the Worker under wrangler dev, a Docker host-agent behind a real TCP proxy,
 * the scripted droid in its container asking before a shell command (its `ask` step, the
 * runner's approval path every runtime's hook uses), the official MCP SDK client as the caller.
 * Asserted on the events, on what the droid was told, and on the container's files.
 */
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../protocol/approvals.js";
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { execAs, projectContainer } from "../support/docker-exec.js";
import { TestStack } from "../support/stack.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { followUntilReady, runSteps, SEND_RESPONSE } from "./support.js";

type ApprovalRequestEvent = Extract<SessionEvent, { type: "approval_request" }>;

let stack: TestStack;
let proxy: TcpProxy;
let host: HostAgent;
let caller: TestCaller;
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });

beforeAll(async () => {
  stack = await TestStack.start();
  proxy = await TcpProxy.start(Number(new URL(stack.url).port));
  host = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    workerUrl: proxy.url,
    heartbeatMs: 500,
    reconnectMaxMs: 1_000,
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 120_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await proxy?.close();
});

/** Shell commands ask; `rm -rf` is refused outright; everything else runs unasked. */
const SHELL_ASKS: ApprovalPolicy = {
  rules: [
    { kind: "shell", match: "rm -rf *", action: "deny" },
    { kind: "shell", action: "ask" },
  ],
  default: "allow",
};

async function projectWith(policy: ApprovalPolicy, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `approvals-${crypto.randomUUID().slice(0, 12)}`,
    approval_policy: policy,
    ...extra,
  });
  return created.project_id;
}

async function droidIn(projectId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { session_id } = await caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    ...extra,
  });
  await followUntilReady(caller, session_id, "ant", []);
  return session_id;
}

const approvalEvents = (sessionId: string, type: SessionEvent["type"]) =>
  caller.events.filter((e) => e.session_id === sessionId && e.type === type);

/**
 * The droid asks to run `command` (in its workspace); resolves with the step's outputs once the
 * script is done, and `request` with the approval_request the caller receives (if it is asked).
 */
function ask(sessionId: string, command: string, timeoutMs = 90_000) {
  const before = caller.events.length;
  const outputs = runSteps(
    caller,
    sessionId,
    [{ op: "ask", request: { kind: "shell", command, summary: `run ${command}` } }],
    timeoutMs,
  );
  const request = () =>
    caller.waitFor(
      (e) =>
        e.type === "approval_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
      30_000,
      "approval_request",
    ) as Promise<ApprovalRequestEvent>;
  return { outputs, request };
}

function decisionOf(outputs: Record<string, unknown>[]): Record<string, unknown> {
  const line = outputs.find((o) => o.op === "approval");
  if (!line) throw new Error(`the droid printed no decision: ${JSON.stringify(outputs)}`);
  return line;
}

async function workspaceHas(projectId: string, file: string): Promise<boolean> {
  const container = await projectContainer(docker, projectId);
  const path = `/workspace/default/${file}`;
  const found = await execAs(container, "0", [
    "sh",
    "-c",
    'if [ -e "$1" ]; then echo yes; else echo no; fi',
    "sh",
    path,
  ]);
  // Either answer must be printed: a check that could not run is not a "no".
  if (found.code !== 0 || !/^(yes|no)$/.test(found.out.trim()))
    throw new Error(`could not check ${path}: ${found.out}`);
  return found.out.trim() === "yes";
}

function answer(sessionId: string, requestId: string, decision: string, message?: string) {
  return caller.call("approval_response", {
    session_id: sessionId,
    request_id: requestId,
    decision,
    ...(message ? { message } : {}),
  });
}

describe("an agent asking before a shell command", () => {
  let projectId: string;
  let sessionId: string;

  beforeAll(async () => {
    projectId = await projectWith(SHELL_ASKS);
    sessionId = await droidIn(projectId);
  }, 120_000);

  it("allow: the caller sees the exact command, and it runs once allowed", async () => {
    const command = "touch allowed-once.txt";
    const { outputs, request } = ask(sessionId, command);
    const asked = await request();
    expect(asked).toMatchObject({ kind: "shell", command, agent: "scripted", summary: `run ${command}` });
    expect(Date.parse(asked.deadline)).toBeGreaterThan(Date.now());
    // Listed while it waits.
    const pending = await caller.ok<{ pending_approvals: number; open_approvals: { request_id: string }[] }>(
      "session",
      { action: "pending", session_id: sessionId },
    );
    expect(pending.pending_approvals).toBe(1);
    expect(pending.open_approvals.map((a) => a.request_id)).toEqual([asked.request_id]);
    expect(await workspaceHas(projectId, "allowed-once.txt")).toBe(false);

    const answered = await answer(sessionId, asked.request_id, "allow");
    expect(answered.isError).toBeFalsy();
    const out = await outputs;
    expect(decisionOf(out)).toMatchObject({ decision: "allow", by: "answer" });
    expect(out.find((o) => o.op === "ran")).toMatchObject({ exit_code: 0 });
    expect(await workspaceHas(projectId, "allowed-once.txt")).toBe(true);
    await caller.waitFor(
      (e) => e.type === "approval_granted" && e.session_id === sessionId && e.request_id === asked.request_id,
    );
    // A second answer is refused: the first one decided.
    const again = await answer(sessionId, asked.request_id, "deny");
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toContain("already");
  });

  it("deny: the agent is told the caller's message, and the command never runs", async () => {
    const { outputs, request } = ask(sessionId, "touch denied.txt");
    const asked = await request();
    await answer(sessionId, asked.request_id, "deny", "not today: open a pull request instead");
    const decision = decisionOf(await outputs);
    expect(decision).toMatchObject({
      decision: "deny",
      by: "answer",
      message: "not today: open a pull request instead",
    });
    expect(await workspaceHas(projectId, "denied.txt")).toBe(false);
    const denied = await caller.waitFor(
      (e) => e.type === "approval_denied" && e.request_id === asked.request_id,
    );
    expect(denied).toMatchObject({ by: "answer", message: "not today: open a pull request instead" });
  });

  it("a rule's deny refuses at once, without asking anyone", async () => {
    const asksBefore = approvalEvents(sessionId, "approval_request").length;
    const { outputs } = ask(sessionId, "rm -rf ./src");
    const decision = decisionOf(await outputs);
    expect(decision).toMatchObject({ decision: "deny", by: "policy" });
    expect(String(decision.message)).toContain("rule 1");
    expect(approvalEvents(sessionId, "approval_request").length).toBe(asksBefore);
  });

  it("authority: a read-only token and another project's token cannot answer; unknown ids are clear errors", async () => {
    const { outputs, request } = ask(sessionId, "touch by-the-writer.txt");
    const asked = await request();
    const readOnly = await caller.ok<{ token: string }>("token", {
      action: "create",
      name: "reader",
      scope: `project:${projectId}:ro`,
    });
    const otherProject = await caller.newProject();
    const stranger = await caller.ok<{ token: string }>("token", {
      action: "create",
      name: "stranger",
      scope: `project:${otherProject}`,
    });
    for (const token of [readOnly.token, stranger.token]) {
      const other = await TestCaller.connect(stack.mcpUrl, token);
      try {
        const refused = await other.call("approval_response", {
          session_id: sessionId,
          request_id: asked.request_id,
          decision: "allow",
        });
        expect(refused.isError).toBe(true);
      } finally {
        await other.close();
      }
    }
    const unknown = await answer(sessionId, "apr_doesnotexist0000", "allow");
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toContain("unknown_request");
    // Still waiting: the refused answers decided nothing.
    expect(await workspaceHas(projectId, "by-the-writer.txt")).toBe(false);
    await answer(sessionId, asked.request_id, "allow");
    expect(decisionOf(await outputs)).toMatchObject({ decision: "allow" });
    expect(await workspaceHas(projectId, "by-the-writer.txt")).toBe(true);
  });

  it("an interrupt takes the question back: nobody is left to answer it", async () => {
    const { outputs, request } = ask(sessionId, "touch interrupted.txt");
    const asked = await request();
    await caller.ok("session", { action: "interrupt", session_id: sessionId });
    // An interrupted script never prints its `done`: nothing to wait for.
    void outputs.catch(() => undefined);
    const ended = await caller.waitFor(
      (e) => e.type === "approval_denied" && e.request_id === asked.request_id,
      30_000,
      "the withdrawn question's end",
    );
    expect(ended).toMatchObject({ by: "ended", message: "the agent took its question back" });
    // The droid's own account of it, so no later step reads it as its own.
    await caller.waitForOutput(sessionId, (d) => d.op === "approval" && d.interrupted === true);
    const late = await answer(sessionId, asked.request_id, "allow");
    expect(late.isError).toBe(true);
    expect(await workspaceHas(projectId, "interrupted.txt")).toBe(false);
  });

  it("allow_session: the same kind is not asked again", async () => {
    const first = ask(sessionId, "touch session-1.txt");
    const asked = await first.request();
    await answer(sessionId, asked.request_id, "allow_session");
    expect(decisionOf(await first.outputs)).toMatchObject({ decision: "allow", scope: "session" });
    const asksBefore = approvalEvents(sessionId, "approval_request").length;
    const second = ask(sessionId, "touch session-2.txt");
    expect(decisionOf(await second.outputs)).toMatchObject({ decision: "allow", by: "session_allowance" });
    expect(approvalEvents(sessionId, "approval_request").length).toBe(asksBefore);
    expect(await workspaceHas(projectId, "session-2.txt")).toBe(true);
    // The rule's deny still holds: an allowance never outranks a deny.
    expect(decisionOf(await ask(sessionId, "rm -rf ./x").outputs)).toMatchObject({
      decision: "deny",
      by: "policy",
    });
  });
});

describe("a caller tool under a policy that asks", () => {
  it("denied, it never reaches the caller and the droid is told why; allowed, it does", async () => {
    const projectId = await projectWith({
      rules: [{ kind: "mcp_tool", match: "ant_*", action: "ask" }],
      default: "allow",
    });
    const { session_id: sessionId } = await caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
      caller_id: "ant",
      caller_tools: [SEND_RESPONSE],
    });
    await followUntilReady(caller, sessionId, "ant", [SEND_RESPONSE]);
    const before = caller.events.length;
    const denied = runSteps(caller, sessionId, [
      { op: "call", id: "gated", name: "ant_send_response", arguments: { message: "x" } },
    ]);
    const asked = (await caller.waitFor(
      (e) =>
        e.type === "approval_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
    )) as ApprovalRequestEvent;
    expect(asked).toMatchObject({ kind: "mcp_tool", tool: "ant_send_response", arguments: { message: "x" } });
    await answer(sessionId, asked.request_id, "deny", "not that tool");
    const out = (await denied).find((o) => o.op === "call");
    expect(out).toMatchObject({ is_error: true });
    expect(JSON.stringify(out)).toContain("not that tool");
    expect(approvalEvents(sessionId, "caller_tool_request")).toEqual([]);

    caller.answerWith((r) => (r.session_id === sessionId ? { result: "sent" } : "ignore"));
    const allowed = runSteps(caller, sessionId, [
      { op: "call", id: "gated-2", name: "ant_send_response", arguments: { message: "y" } },
    ]);
    const second = (await caller.waitFor(
      (e) => e.type === "approval_request" && e.session_id === sessionId && e.request_id !== asked.request_id,
    )) as ApprovalRequestEvent;
    await answer(sessionId, second.request_id, "allow");
    expect((await allowed).find((o) => o.op === "call")).toMatchObject({ is_error: false });
    expect(approvalEvents(sessionId, "caller_tool_request")).toHaveLength(1);
  });
});

describe("a caller whose MCP client can elicit", () => {
  it("gets the approval as its client's own dialog: accept runs the command, decline denies it", async () => {
    const seen: string[] = [];
    let next: "allow" | "decline" = "allow";
    const human = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "human-in-the-loop", {
      elicit: (params) => {
        seen.push(params.message);
        return next === "allow"
          ? { action: "accept", content: { decision: "allow" } }
          : { action: "decline" };
      },
    });
    try {
      const created = await human.ok<{ project_id: string }>("project", {
        action: "create",
        name: `elicit-${crypto.randomUUID().slice(0, 8)}`,
        approval_policy: SHELL_ASKS,
      });
      const { session_id: sessionId } = await human.ok<{ session_id: string }>("session", {
        action: "spawn",
        project_id: created.project_id,
        new_session: true,
      });
      await followUntilReady(human, sessionId, "ant", []);
      const allowed = await runSteps(human, sessionId, [
        { op: "ask", request: { kind: "shell", command: "touch by-dialog.txt", summary: "make a file" } },
      ]);
      expect(allowed.find((o) => o.op === "approval")).toMatchObject({ decision: "allow", by: "answer" });
      expect(seen.at(-1)).toContain("touch by-dialog.txt");
      expect(await workspaceHas(created.project_id, "by-dialog.txt")).toBe(true);
      next = "decline";
      const declined = await runSteps(human, sessionId, [
        { op: "ask", request: { kind: "shell", command: "touch declined.txt", summary: "make a file" } },
      ]);
      expect(declined.find((o) => o.op === "approval")).toMatchObject({ decision: "deny", by: "answer" });
      expect(await workspaceHas(created.project_id, "declined.txt")).toBe(false);
      expect(seen).toHaveLength(2);
    } finally {
      await human.close();
    }
  });
});

describe("deadlines and faults", () => {
  it("no answer: denied at the deadline, and a late answer is refused", async () => {
    const projectId = await projectWith(SHELL_ASKS, { approval_timeout_seconds: 3 });
    const sessionId = await droidIn(projectId);
    const { outputs, request } = ask(sessionId, "touch never.txt");
    const asked = await request();
    const decision = decisionOf(await outputs);
    expect(decision).toMatchObject({ decision: "deny", by: "timeout" });
    await caller.waitFor((e) => e.type === "approval_expired" && e.request_id === asked.request_id);
    expect(await workspaceHas(projectId, "never.txt")).toBe(false);
    const late = await answer(sessionId, asked.request_id, "allow");
    expect(late.isError).toBe(true);
    expect(JSON.stringify(late.content)).toContain("request_expired");
  });

  it("a session's own policy is never looser than its project's", async () => {
    const projectId = await projectWith(SHELL_ASKS);
    const refused = await caller.call("session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
      approval_policy: {
        rules: [
          { kind: "shell", action: "allow" },
          { kind: "shel", action: "ask" },
        ],
      },
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("approval_policy.rules.1.kind");
    // "auto" for the session does not lift the project's rules.
    const sessionId = await droidIn(projectId, { approval_policy: "auto" });
    const { outputs, request } = ask(sessionId, "touch still-asked.txt");
    const asked = await request();
    await answer(sessionId, asked.request_id, "deny");
    expect(decisionOf(await outputs)).toMatchObject({ decision: "deny" });
  });

  it("host-agent SIGKILL while an approval waits: the answer still lands and the command runs once", async () => {
    const projectId = await projectWith(SHELL_ASKS);
    const sessionId = await droidIn(projectId);
    const { outputs, request } = ask(sessionId, "echo ran >> once.txt", 120_000);
    const asked = await request();
    host.process.kill("SIGKILL");
    await host.exited;
    await answer(sessionId, asked.request_id, "allow");
    host = await stack.restartHost(host);
    expect(decisionOf(await outputs)).toMatchObject({ decision: "allow", by: "answer" });
    const container = await projectContainer(docker, projectId);
    const content = await execAs(container, "0", ["cat", "/workspace/default/once.txt"]);
    expect(content.out.trim().split("\n")).toEqual(["ran"]);
    expect(approvalEvents(sessionId, "approval_request").length).toBe(1);
  });

  it("a tunnel cut while an approval waits: the answer lands once the tunnel is back", async () => {
    const projectId = await projectWith(SHELL_ASKS);
    const sessionId = await droidIn(projectId);
    const { outputs, request } = ask(sessionId, "echo ran >> cut.txt", 120_000);
    const asked = await request();
    proxy.cut();
    await new Promise((r) => setTimeout(r, 1_500));
    await answer(sessionId, asked.request_id, "allow");
    proxy.restore();
    expect(decisionOf(await outputs)).toMatchObject({ decision: "allow", by: "answer" });
    const container = await projectContainer(docker, projectId);
    const content = await execAs(container, "0", ["cat", "/workspace/default/cut.txt"]);
    expect(content.out.trim().split("\n")).toEqual(["ran"]);
    expect(approvalEvents(sessionId, "approval_request").length).toBe(1);
  });
  // Last: the other tests' caller lost its stream with the old Worker.
  it("a Worker restart while an approval waits: the question and its answer survive, the command runs once", async () => {
    const projectId = await projectWith(SHELL_ASKS);
    const sessionId = await droidIn(projectId);
    const { outputs, request } = ask(sessionId, "echo ran >> restart.txt", 180_000);
    const asked = await request();
    await stack.restartWorker();
    // A caller of its own after the restart (the first one's stream went with the old Worker).
    const after = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "after-restart");
    try {
      const pending = await after.ok<{ open_approvals: { request_id: string }[] }>("session", {
        action: "pending",
        session_id: sessionId,
      });
      expect(pending.open_approvals.map((a) => a.request_id)).toEqual([asked.request_id]);
      await after.ok("approval_response", {
        session_id: sessionId,
        request_id: asked.request_id,
        decision: "allow",
      });
      after.follow(sessionId);
      await after.waitForOutput(sessionId, (d) => d.op === "approval" && d.decision === "allow", 120_000);
      await after.waitForOutput(sessionId, (d) => d.op === "ran", 60_000);
    } finally {
      await after.close();
    }
    void outputs.catch(() => undefined);
    const container = await projectContainer(docker, projectId);
    const content = await execAs(container, "0", ["cat", "/workspace/default/restart.txt"]);
    expect(content.out.trim().split("\n")).toEqual(["ran"]);
  });
});
