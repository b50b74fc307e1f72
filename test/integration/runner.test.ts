/**
 * The runner as a real process (container-client in runner mode) running several scripted droids
 * as its agents, one per session, against a project container socket served in this process (the
 * host-agent's side). The host side is stopped and started again the way a host-agent restart
 * does it: the runner and its agents keep running, the runner reconnects, reports every agent
 * (with its session's secret) and re-sends, per session, what was not acknowledged.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ContainerConnection,
  RelaySocketServer,
  SocketSecrets,
} from "../../host-agent/src/socket/index.js";
import { createLogger } from "../../lib/log.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { AgentEnv, type RunnerAgent } from "../../protocol/socket.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const RUNNER_TOKEN = "runner-token";
const A = "ses_00000000000000000000000a";
const B = "ses_00000000000000000000000b";
const TOKENS: Record<string, string> = { [A]: "token-a", [B]: "token-b" };
const logger = createLogger({ name: "runner-it", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

/** The host side of the socket, recording what the runner reports and sends, per session. */
class HostSide {
  readonly events = new Map<string, AgentEvent[]>();
  readonly hellos: RunnerAgent[][] = [];
  runner: ContainerConnection | null = null;
  #server: RelaySocketServer;

  constructor(path: string) {
    const secrets = new SocketSecrets(RUNNER_TOKEN);
    for (const [session, token] of Object.entries(TOKENS)) secrets.addSession(session, token);
    this.#server = new RelaySocketServer({
      path,
      projectId: "prj_000000000000000000000001",
      auth: secrets,
      logger,
      handlers: {
        callerTool: async () => null,
        oubliette: async () => {
          throw new Error("no Oubliette tools here");
        },
        runnerConnected: (connection, agents) => {
          this.runner = connection;
          this.hellos.push(agents);
        },
        runnerGone: () => {
          this.runner = null;
        },
        agentEvents: (session, events) => {
          const list = this.events.get(session) ?? [];
          list.push(...events);
          this.events.set(session, list);
        },
      },
    });
  }

  start(): Promise<void> {
    return this.#server.start();
  }

  close(): Promise<void> {
    return this.#server.close();
  }

  of(session: string): AgentEvent[] {
    return this.events.get(session) ?? [];
  }

  /** The droid_output `data` lines of a session seen so far. */
  outputs(session: string): Record<string, unknown>[] {
    return this.of(session).flatMap((e) =>
      e.type === "droid_output" && e.data ? [e.data as Record<string, unknown>] : [],
    );
  }

  startAgent(session: string): Promise<unknown> {
    if (!this.runner) throw new Error("no runner connected");
    return this.runner.peer.request("agent_start", {
      session_id: session,
      session_token: TOKENS[session],
      cwd: repoRoot,
      env: { TEST_AGENT_NAME: session },
    });
  }

  message(session: string, seq: number, text: string): Promise<unknown> {
    if (!this.runner) throw new Error("no runner connected");
    return this.runner.peer.request("agent_message", { session_id: session, seq, text });
  }

  ack(session: string, seq: number): void {
    this.runner?.peer.notify("agent_events_ack", { session_id: session, seq });
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
let host: HostSide | undefined;
let runnerStderr = "";

function startRunner(extraEnv: Record<string, string> = {}): ChildProcessWithoutNullStreams {
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
      ...extraEnv,
    },
  });
  runnerStderr = "";
  child.stdout.resume();
  child.stderr.on("data", (chunk: Buffer) => {
    runnerStderr += chunk.toString();
  });
  return child;
}

function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

const script = (id: string, steps: unknown[]) => JSON.stringify({ id, steps });
const done = (session: string, id: string) => () =>
  host?.outputs(session).some((d) => d.op === "done" && d.id === id) === true;

/** A connected runner with both agents started and ready. */
async function twoAgents(env: Record<string, string> = {}): Promise<HostSide> {
  const side = new HostSide(path);
  host = side;
  await side.start();
  runner = startRunner(env);
  await until(() => side.hellos.length === 1, "the runner's hello");
  expect(side.hellos[0]).toEqual([]);
  await Promise.all([side.startAgent(A), side.startAgent(B)]);
  for (const s of [A, B]) await until(() => side.outputs(s).some((d) => d.op === "ready"), `${s} ready`);
  return side;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "runner-it-"));
  path = join(dir, "relay.sock");
});

afterEach(async () => {
  if (runner && runner.exitCode === null) {
    runner.kill("SIGKILL");
    await exited(runner);
  }
  await host?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("runner", () => {
  it("runs two agents: each message by seq to its own agent, each session's events numbered apart", async () => {
    const side = await twoAgents();
    for (const s of [A, B]) {
      expect(side.of(s)[0]).toMatchObject({ seq: 1, type: "droid_status", status: "running" });
      expect(side.of(s).map((e) => e.seq)).toEqual(side.of(s).map((_, i) => i + 1));
    }
    await side.message(A, 1, script("a1", [{ op: "print", data: "for a" }]));
    await side.message(A, 1, script("a1", [{ op: "print", data: "for a" }]));
    await side.message(B, 1, script("b1", [{ op: "print", data: "for b" }]));
    await side.message(B, 2, script("b2", [{ op: "fs", action: "whoami" }]));
    await until(done(A, "a1"), "a's script");
    await until(done(B, "b2"), "b's scripts");
    expect(
      side
        .outputs(A)
        .filter((d) => d.op === "print")
        .map((d) => d.data),
    ).toEqual(["for a"]);
    expect(
      side
        .outputs(B)
        .filter((d) => d.op === "print")
        .map((d) => d.data),
    ).toEqual(["for b"]);
    // The agent works where agent_start said.
    expect(side.outputs(B).find((d) => d.op === "fs")).toMatchObject({ cwd: repoRoot.replace(/\/$/, "") });
    // An unknown session's message is refused, not delivered to anyone.
    await expect(side.message("ses_00000000000000000000000c", 1, "x")).rejects.toMatchObject({
      reason: "session_not_found",
    });
  }, 60_000);

  it("keeps its agents through a host-side restart and re-sends each session's unacknowledged events", async () => {
    const side = await twoAgents();
    await side.message(A, 1, script("before", [{ op: "print", data: "before" }]));
    await until(done(A, "before"), "a's first script");
    const ackedA = side.of(A).at(-1)?.seq ?? 0;
    side.ack(A, ackedA);
    // B's events are not acknowledged at all.
    const lastB = side.of(B).at(-1)?.seq ?? 0;
    await new Promise((r) => setTimeout(r, 100));
    await side.close();
    const next = new HostSide(path);
    host = next;
    await next.start();
    await until(() => next.hellos.length === 1, "the runner's reconnect");
    const reported = new Map(next.hellos[0]?.map((a) => [a.session_id, a]));
    expect(reported.get(A)).toMatchObject({
      status: "running",
      delivered_message_seq: 1,
      session_token: TOKENS[A],
    });
    expect(reported.get(B)).toMatchObject({
      status: "running",
      delivered_message_seq: 0,
      session_token: TOKENS[B],
    });
    await until(() => next.of(B).length >= lastB, "b's re-sent events");
    // B: everything again from 1; A: nothing it acknowledged.
    expect(
      next
        .of(B)
        .map((e) => e.seq)
        .slice(0, lastB),
    ).toEqual(Array.from({ length: lastB }, (_, i) => i + 1));
    await next.message(A, 2, script("after", [{ op: "print", data: "after" }]));
    await until(done(A, "after"), "a's script after");
    const seqs = next.of(A).map((e) => e.seq);
    expect(seqs[0]).toBe(ackedA + 1);
    expect(new Set(seqs).size).toBe(seqs.length);
    // The same agents: neither was started again.
    expect(next.outputs(A).some((d) => d.op === "ready")).toBe(false);
    expect(runner?.exitCode).toBeNull();
  }, 60_000);

  it("one agent ending ends neither the runner nor the other agent; its slot goes once its end is stored", async () => {
    const side = await twoAgents();
    // Exiting with 0 is the scripted droid ending its session on purpose (any other end is a crash).
    await side.message(A, 1, script("bye", [{ op: "exit", code: 0 }]));
    await until(() => side.of(A).some((e) => e.type === "droid_status" && e.status === "exited"), "a's exit");
    const exit = side.of(A).find((e) => e.type === "droid_status" && e.status === "exited");
    expect(exit).toMatchObject({ exit_code: 0 });
    side.ack(A, exit?.seq ?? 0);
    await new Promise((r) => setTimeout(r, 300));
    expect(runner?.exitCode).toBeNull();
    await side.message(B, 1, script("still", [{ op: "print", data: "still here" }]));
    await until(done(B, "still"), "b still working");
    // A's agent is forgotten; a restarted host would hear only of B.
    await side.close();
    const next = new HostSide(path);
    host = next;
    await next.start();
    await until(() => next.hellos.length === 1, "the runner's reconnect");
    expect(next.hellos[0]?.map((a) => a.session_id)).toEqual([B]);
  }, 60_000);

  it("starts a crashed agent again: its turn fails, agent_restarted says how, the next message is taken", async () => {
    const side = await twoAgents();
    const readyPids = () =>
      side
        .outputs(A)
        .filter((d) => d.op === "ready")
        .map((d) => Number(d.pid));
    await side.message(
      A,
      1,
      script("slow", [
        { op: "print", data: "in" },
        { op: "sleep", ms: 60_000 },
      ]),
    );
    await until(() => side.outputs(A).some((d) => d.op === "print" && d.data === "in"), "a's turn under way");
    process.kill(readyPids()[0] ?? 0, "SIGKILL");
    await until(() => side.of(A).some((e) => e.type === "agent_restarted"), "a's restart");
    const restarted = side.of(A).find((e) => e.type === "agent_restarted");
    expect(restarted).toMatchObject({ signal: "SIGKILL", exit_code: null, restarts: 1, resumed: false });
    expect(restarted?.type === "agent_restarted" ? restarted.message : "").toContain("killed by SIGKILL");
    // The turn it was in is over, as failed, and says why.
    expect(side.of(A).find((e) => e.type === "completion")).toMatchObject({
      message_seq: 1,
      stop_reason: "error",
    });
    expect(side.of(A).some((e) => e.type === "error" && e.message.includes("turn of message 1"))).toBe(true);
    await until(() => readyPids().length === 2, "a's new process");
    expect(readyPids()[1]).not.toBe(readyPids()[0]);
    // The session goes on: the next message reaches the new process, and b never noticed.
    await side.message(A, 2, script("after", [{ op: "print", data: "after" }]));
    await until(done(A, "after"), "a's script after the restart");
    expect(side.of(A).some((e) => e.type === "droid_status" && e.status !== "running")).toBe(false);
    await side.message(B, 1, script("b", [{ op: "print", data: "b" }]));
    await until(done(B, "b"), "b unaffected");
  }, 60_000);

  it("gives up on an agent that keeps dying: the session fails, saying why", async () => {
    const side = await twoAgents();
    const readyPids = () =>
      side
        .outputs(A)
        .filter((d) => d.op === "ready")
        .map((d) => Number(d.pid));
    for (let kill = 1; kill <= 4; kill += 1) {
      await until(() => readyPids().length === kill, `a's process ${kill}`, 30_000);
      process.kill(readyPids()[kill - 1] ?? 0, "SIGKILL");
    }
    await until(
      () => side.of(A).some((e) => e.type === "droid_status" && e.status === "failed"),
      "a's failure",
      30_000,
    );
    const failed = side.of(A).find((e) => e.type === "droid_status" && e.status === "failed");
    expect(failed?.type === "droid_status" ? failed.message : "").toMatch(
      /4th unexpected end within 120 s; it is not started again/,
    );
    expect(side.of(A).filter((e) => e.type === "agent_restarted")).toHaveLength(3);
    expect(readyPids()).toHaveLength(4);
  }, 60_000);

  it("an agent that cannot start: its refusal and its failed event say the same, in one wording", async () => {
    const side = new HostSide(path);
    host = side;
    await side.start();
    runner = startRunner({ [AgentEnv.agentCommand]: JSON.stringify([join(dir, "no-such-agent")]) });
    await until(() => side.hellos.length === 1, "the runner's hello");
    const refusal = await side.startAgent(A).then(
      () => "started",
      (err: Error) => err.message,
    );
    expect(refusal).toMatch(/^the agent could not start: .*no-such-agent/);
    await until(
      () => side.of(A).some((e) => e.type === "droid_status" && e.status === "failed"),
      "a's failure",
    );
    const failed = side.of(A).find((e) => e.type === "droid_status" && e.status === "failed");
    // The host ends the session on whichever it hears first: both must give the same reason.
    expect(failed?.type === "droid_status" ? failed.message : "").toBe(refusal);
  }, 30_000);

  it("stops one agent when asked and forwards agents' stderr, prefixed by session, to its own", async () => {
    // At info the agents' container-clients log their connection on stderr.
    const side = await twoAgents({ OUBLIETTE_LOG_LEVEL: "info" });
    const stopped = await side.runner?.peer.request("agent_stop", {
      session_id: A,
      reason: "test",
      grace_ms: 2_000,
    });
    // The scripted droid ends on its own when its stdin ends: the first step of a stop.
    expect(stopped).toEqual({ exit_code: 0, signal: null });
    await side.message(B, 1, script("b", [{ op: "print", data: "b lives" }]));
    await until(done(B, "b"), "b still working");
    // The scripted droid's container-client logs to stderr: those lines reach the runner's stderr.
    await until(() => runnerStderr.includes(`[${B}] `), "b's stderr in the runner's");
  }, 60_000);

  it("under the process runtime, ends its agents when the host-agent goes away", async () => {
    host = new HostSide(path);
    await host.start();
    runner = startRunner({ [AgentEnv.exitWithParent]: "1" });
    await until(() => host?.hellos.length === 1, "the runner's hello");
    await host.startAgent(A);
    await until(() => host?.outputs(A).some((d) => d.op === "ready") === true, "the agent's ready line");
    runner.stdin.end();
    expect(await exited(runner)).not.toBeNull();
  }, 40_000);
});
