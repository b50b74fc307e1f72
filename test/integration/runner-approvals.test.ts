/**
 * Permission questions through the runner, as real processes: the runner (container-client in
 * runner mode) runs a scripted droid whose `ask` step prints an approval_request; the runner puts
 * it to the host side of the socket (served here, as the host-agent does) as `approval`, and
 * writes the decision back to the droid. Durable like a caller tool call: a question pending when
 * the host side goes away is asked again, under the same approval id, of the next one, and is
 * decided once. What cannot be asked is a deny by "error"; a question nobody waits for any more
 * is cancelled at the host side.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ContainerConnection } from "../../host-agent/src/socket/container-connection.js";
import { RelaySocketServer, SocketSecrets } from "../../host-agent/src/socket/index.js";
import type { ContainerHandlers } from "../../host-agent/src/socket/types.js";
import { createLogger } from "../../lib/log.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { type ApprovalDecision, ApprovalIdSchema } from "../../protocol/approvals.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { AgentEnv, type ApprovalParams } from "../../protocol/socket.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const RUNNER_TOKEN = "runner-token";
const A = "ses_0000000000000000000000a1";
const TOKEN = "token-a1";
const logger = createLogger({
  name: "runner-approvals-it",
  level: process.env.TEST_LOG_LEVEL ?? "silent",
  fd: 2,
});

/** One `approval` request as the host side received it; the test decides or refuses it. */
interface Asked {
  params: ApprovalParams;
  signal: AbortSignal;
  decide(decision: ApprovalDecision): void;
  refuse(error: RpcError): void;
}

/** How the host side serves `approval`: held for the test, refused, or not at all (an older host-agent). */
type ApprovalMode = "hold" | "refuse" | "absent";

class HostSide {
  readonly events: AgentEvent[] = [];
  readonly asked: Asked[] = [];
  runner: ContainerConnection | null = null;
  hellos = 0;
  #server: RelaySocketServer;

  constructor(path: string, mode: ApprovalMode = "hold") {
    const secrets = new SocketSecrets(RUNNER_TOKEN);
    secrets.addSession(A, TOKEN);
    const handlers: ContainerHandlers = {
      callerTool: async () => null,
      oubliette: async () => {
        throw new Error("no Oubliette tools here");
      },
      runnerConnected: (connection) => {
        this.runner = connection;
        this.hellos += 1;
      },
      runnerGone: () => {
        this.runner = null;
      },
      agentEvents: (_session, events) => {
        this.events.push(...events);
      },
    };
    if (mode === "hold") {
      handlers.approval = (params, ctx) =>
        new Promise<ApprovalDecision>((decide, refuse) => {
          this.asked.push({ params, signal: ctx.signal, decide, refuse });
        });
    } else if (mode === "refuse") {
      handlers.approval = async () => {
        throw new RpcError(RpcErrorCode.ServerError, "the session has ended on this host", {
          reason: "session_ended",
        });
      };
    }
    this.#server = new RelaySocketServer({
      path,
      projectId: "prj_000000000000000000000001",
      auth: secrets,
      logger,
      handlers,
    });
  }

  start(): Promise<void> {
    return this.#server.start();
  }

  close(): Promise<void> {
    return this.#server.close();
  }

  /** The droid_output `data` lines seen so far. */
  outputs(): Record<string, unknown>[] {
    return this.events.flatMap((e) =>
      e.type === "droid_output" && e.data ? [e.data as Record<string, unknown>] : [],
    );
  }

  request(method: string, params: unknown): Promise<unknown> {
    if (!this.runner) throw new Error("no runner connected");
    return this.runner.peer.request(method, params);
  }
}

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let dir: string;
let path: string;
let runner: ChildProcessWithoutNullStreams | undefined;
const sides: HostSide[] = [];

function startRunner(): ChildProcessWithoutNullStreams {
  const tsx = ["node", "--import", "tsx"];
  const child = spawn(process.execPath, ["--import", "tsx", "container-client/src/main.ts", "runner"], {
    cwd: repoRoot,
    env: {
      ...process.env,
      [AgentEnv.socketPath]: path,
      [AgentEnv.runnerToken]: RUNNER_TOKEN,
      [AgentEnv.agentCommand]: JSON.stringify([...tsx, "test/fixtures/scripted-droid/main.ts"]),
      OUBLIETTE_CLIENT_COMMAND: JSON.stringify([...tsx, "container-client/src/main.ts"]),
      OUBLIETTE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
    },
  });
  child.stdout.resume();
  child.stderr.resume();
  return child;
}

async function hostSide(mode: ApprovalMode = "hold"): Promise<HostSide> {
  const side = new HostSide(path, mode);
  sides.push(side);
  await side.start();
  return side;
}

/** A runner connected to `side`, with session A's droid started and ready. */
async function readyAgent(side: HostSide): Promise<void> {
  runner = startRunner();
  await until(() => side.hellos === 1, "the runner's hello");
  await side.request("agent_start", {
    session_id: A,
    session_token: TOKEN,
    cwd: repoRoot,
    env: {},
    agent: { runtime: "scripted", approvals: "ask" },
  });
  await until(() => side.outputs().some((d) => d.op === "ready"), "the droid's ready line");
}

const SHELL = { kind: "shell", command: "echo approved-$((6 * 7))", summary: "say the answer" } as const;

/** A script that asks to run SHELL. */
function askScript(id: string): string {
  return JSON.stringify({ id, steps: [{ op: "ask", request: SHELL }] });
}

const approvals = (side: HostSide) => side.outputs().filter((d) => d.op === "approval");
const done = (side: HostSide, id: string) => () => side.outputs().some((d) => d.op === "done" && d.id === id);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "runner-approvals-"));
  path = join(dir, "relay.sock");
});

afterEach(async () => {
  if (runner && runner.exitCode === null) {
    runner.kill("SIGKILL");
    await new Promise((resolve) => runner?.once("exit", resolve));
  }
  runner = undefined;
  for (const side of sides.splice(0)) await side.close();
  await rm(dir, { recursive: true, force: true });
});

describe("runner: permission questions", () => {
  it("puts an agent's question to the host as `approval`, and writes the decision back to that agent", async () => {
    const side = await hostSide();
    await readyAgent(side);
    await side.request("agent_message", { session_id: A, seq: 1, text: askScript("s1") });
    await until(() => side.asked.length === 1, "the approval request");
    const asked = side.asked[0] as Asked;
    expect(asked.params).toEqual({
      session_id: A,
      approval_id: asked.params.approval_id,
      agent: "scripted",
      request: SHELL,
    });
    expect(ApprovalIdSchema.safeParse(asked.params.approval_id).success).toBe(true);
    // The question is the runner's to carry, never the session's output.
    expect(side.outputs().some((d) => d.type === "approval_request")).toBe(false);
    // The droid waits for the answer.
    await new Promise((r) => setTimeout(r, 200));
    expect(approvals(side)).toEqual([]);

    asked.decide({ decision: "allow", scope: "once", by: "answer" });
    await until(done(side, "s1"), "the script's end");
    expect(approvals(side)).toEqual([
      { op: "approval", id: expect.any(String), decision: "allow", scope: "once", by: "answer" },
    ]);
    // Allowed, the droid ran the command.
    expect(side.outputs().find((d) => d.op === "ran")).toMatchObject({
      exit_code: 0,
      stdout: "approved-42\n",
    });
    expect(side.asked).toHaveLength(1);
  }, 60_000);

  it("asks a restarted host side again under the same approval id, and the decision lands once", async () => {
    const first = await hostSide();
    await readyAgent(first);
    await first.request("agent_message", { session_id: A, seq: 1, text: askScript("s2") });
    await until(() => first.asked.length === 1, "the approval request");
    const asked = first.asked[0] as Asked;
    await first.close();
    // The first connection's request is over for the host side (the runner keeps the question).
    expect(asked.signal.aborted).toBe(true);

    const next = await hostSide();
    await until(() => next.hellos === 1, "the runner's reconnect");
    await until(() => next.asked.length === 1, "the re-sent approval request");
    const again = next.asked[0] as Asked;
    expect(again.params).toEqual(asked.params);
    // Re-sent once, not once per event batch or retry.
    await new Promise((r) => setTimeout(r, 300));
    expect(next.asked).toHaveLength(1);

    again.decide({ decision: "deny", scope: "once", by: "answer", message: "not today" });
    // A late answer on the dead connection reaches nobody.
    asked.decide({ decision: "allow", scope: "once", by: "answer" });
    await until(done(next, "s2"), "the script's end");
    expect(approvals(next)).toEqual([
      {
        op: "approval",
        id: expect.any(String),
        decision: "deny",
        scope: "once",
        message: "not today",
        by: "answer",
      },
    ]);
    expect([...first.outputs(), ...next.outputs()].filter((d) => d.op === "approval")).toHaveLength(1);
    expect(next.outputs().some((d) => d.op === "ran")).toBe(false);
  }, 60_000);

  it("denies, by error, a question the host side refuses", async () => {
    const side = await hostSide("refuse");
    await readyAgent(side);
    await side.request("agent_message", { session_id: A, seq: 1, text: askScript("s3") });
    await until(done(side, "s3"), "the script's end");
    expect(approvals(side)).toEqual([
      {
        op: "approval",
        id: expect.any(String),
        decision: "deny",
        scope: "once",
        by: "error",
        message: "the approval could not be put to the session: the session has ended on this host",
      },
    ]);
    expect(side.outputs().some((d) => d.op === "ran")).toBe(false);
  }, 60_000);

  it("denies, by error, a question a host side without the method cannot take (an older host-agent)", async () => {
    const side = await hostSide("absent");
    await readyAgent(side);
    await side.request("agent_message", { session_id: A, seq: 1, text: askScript("s4") });
    await until(done(side, "s4"), "the script's end");
    const [denied] = approvals(side);
    expect(denied).toMatchObject({ decision: "deny", by: "error" });
    expect(String(denied?.message)).toMatch(
      /^the approval could not be put to the session: method not found/,
    );
  }, 60_000);

  it("cancels a pending question at the host side when its agent is stopped", async () => {
    const side = await hostSide();
    await readyAgent(side);
    await side.request("agent_message", { session_id: A, seq: 1, text: askScript("s5") });
    await until(() => side.asked.length === 1, "the approval request");
    const asked = side.asked[0] as Asked;
    await side.request("agent_stop", { session_id: A, reason: "test", grace_ms: 2_000 });
    await until(() => asked.signal.aborted, "the cancellation");
    expect(asked.signal.reason).toBeInstanceOf(RpcError);
    expect((asked.signal.reason as RpcError).code).toBe(RpcErrorCode.RequestCancelled);
    expect((asked.signal.reason as RpcError).message).toBe("the agent was stopped");
  }, 60_000);

  it("cancels the question of an agent process that died, and never answers its successor with it", async () => {
    const side = await hostSide();
    await readyAgent(side);
    await side.request("agent_message", { session_id: A, seq: 1, text: askScript("s6") });
    await until(() => side.asked.length === 1, "the approval request");
    const asked = side.asked[0] as Asked;
    const pid = Number(side.outputs().find((d) => d.op === "ready")?.pid);
    process.kill(pid, "SIGKILL");
    await until(() => asked.signal.aborted, "the cancellation");
    expect((asked.signal.reason as RpcError).code).toBe(RpcErrorCode.RequestCancelled);
    expect((asked.signal.reason as RpcError).message).toBe("the agent process that asked has ended");
    await until(() => side.outputs().filter((d) => d.op === "ready").length === 2, "the droid started again");
    // A decision that comes anyway reaches nobody: the new process never sees an answer it did not ask for.
    asked.decide({ decision: "allow", scope: "once", by: "answer" });
    await side.request("agent_message", {
      session_id: A,
      seq: 2,
      text: JSON.stringify({ id: "after", steps: [] }),
    });
    await until(done(side, "after"), "the next script");
    expect(side.outputs().filter((d) => d.op === "error" || d.op === "approval")).toEqual([]);
  }, 60_000);
});
