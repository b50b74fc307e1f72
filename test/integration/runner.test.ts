/**
 * The runner as a real process (container-client in runner mode) with the scripted droid as its
 * agent, against a container socket served in this process (the host-agent's side). The host side
 * is stopped and started again the way a host-agent restart does it: the runner and its agent
 * keep running, the runner reconnects, reports its agent, and re-sends what was not acknowledged.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ContainerConnection, RelaySocketServer } from "../../host-agent/src/socket/index.js";
import { createLogger } from "../../lib/log.js";
import type { AgentEvent, AgentState } from "../../protocol/agent-events.js";
import { AgentEnv } from "../../protocol/socket.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN = "runner-token";
const logger = createLogger({ name: "runner-it", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

/** The host side of the socket, recording what the runner reports and sends. */
class HostSide {
  readonly events: AgentEvent[] = [];
  readonly hellos: AgentState[] = [];
  runner: ContainerConnection | null = null;
  #server: RelaySocketServer;

  constructor(path: string, options: { start: boolean }) {
    this.#server = new RelaySocketServer({
      path,
      sessionId: "ses-runner",
      sessionToken: TOKEN,
      logger,
      handlers: {
        callerTool: async () => null,
        runnerConnected: (connection, agent) => {
          this.runner = connection;
          this.hellos.push(agent);
          if (options.start && agent.status === "idle") void connection.peer.request("agent_start", {});
        },
        runnerGone: () => {
          this.runner = null;
        },
        agentEvents: (events) => this.events.push(...events),
      },
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

  message(seq: number, text: string): Promise<unknown> {
    if (!this.runner) throw new Error("no runner connected");
    return this.runner.peer.request("agent_message", { seq, text });
  }

  ack(seq: number): void {
    this.runner?.peer.notify("agent_events_ack", { seq });
  }
}

async function until(check: () => boolean, what: string, ms = 15_000): Promise<void> {
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

function startRunner(extraEnv: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  const tsx = ["node", "--import", "tsx"];
  const child = spawn(process.execPath, ["--import", "tsx", "container-client/src/main.ts", "runner"], {
    cwd: repoRoot,
    env: {
      ...process.env,
      [AgentEnv.socketPath]: path,
      [AgentEnv.sessionToken]: TOKEN,
      [AgentEnv.agentCommand]: JSON.stringify([...tsx, "test/fixtures/scripted-droid/main.ts"]),
      OUBLIETTE_CLIENT_COMMAND: JSON.stringify([...tsx, "container-client/src/main.ts"]),
      OUBLIETTE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
      ...extraEnv,
    },
  });
  child.stdout.resume();
  child.stderr.resume();
  return child;
}

function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

const script = (id: string, steps: unknown[]) => JSON.stringify({ id, steps });

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
  it("starts the agent when asked, streams its events and delivers each message once", async () => {
    host = new HostSide(path, { start: true });
    await host.start();
    runner = startRunner();
    await until(() => host?.hellos.length === 1, "the runner's hello");
    expect(host.hellos[0]).toMatchObject({ status: "idle", delivered_message_seq: 0 });
    await until(() => host?.outputs().some((d) => d.op === "ready") === true, "the agent's ready line");
    expect(host.events[0]).toMatchObject({ seq: 1, type: "droid_status", status: "running" });
    expect(host.events.map((e) => e.seq)).toEqual(host.events.map((_, i) => i + 1));

    await host.message(1, script("m1", [{ op: "print", data: "first" }]));
    await host.message(1, script("m1", [{ op: "print", data: "first" }]));
    await host.message(2, script("m2", [{ op: "print", data: "second" }]));
    await until(
      () => host?.outputs().some((d) => d.op === "done" && d.id === "m2") === true,
      "the second message",
    );
    const prints = host.outputs().filter((d) => d.op === "print");
    expect(prints.map((d) => d.data)).toEqual(["first", "second"]);
  }, 40_000);

  it("keeps its agent through a host-side restart and re-sends every unacknowledged event", async () => {
    host = new HostSide(path, { start: true });
    await host.start();
    runner = startRunner();
    await until(() => host?.outputs().some((d) => d.op === "ready") === true, "the agent's ready line");
    await host.message(1, script("before", [{ op: "print", data: "before" }]));
    await until(
      () => host?.outputs().some((d) => d.id === "before" && d.op === "done") === true,
      "the first script",
    );
    const acked = host.events.at(-1)?.seq ?? 0;
    host.ack(acked);
    await new Promise((r) => setTimeout(r, 100));
    // The agent keeps working while nobody serves the socket: its output waits in the runner.
    const old = host;
    await old.close();
    host = new HostSide(path, { start: true });
    await host.start();
    await until(() => host?.hellos.length === 1, "the runner's reconnect");
    expect(host.hellos[0]).toMatchObject({ status: "running", delivered_message_seq: 1 });
    expect(runner.exitCode).toBeNull();
    await host.message(2, script("after", [{ op: "print", data: "after" }]));
    await until(
      () => host?.outputs().some((d) => d.id === "after" && d.op === "done") === true,
      "the script after",
    );
    // Everything after the acknowledged seq came again, nothing before it, in order.
    const seqs = host.events.map((e) => e.seq);
    expect(seqs[0]).toBe(acked + 1);
    // The same agent: it was never started again (no second "running", no second "ready").
    expect(host.events.some((e) => e.type === "droid_status")).toBe(false);
    expect(host.outputs().some((d) => d.op === "ready")).toBe(false);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  }, 40_000);

  it("reports the agent's exit and ends once that event is acknowledged", async () => {
    host = new HostSide(path, { start: true });
    await host.start();
    runner = startRunner();
    await until(() => host?.outputs().some((d) => d.op === "ready") === true, "the agent's ready line");
    await host.message(1, script("bye", [{ op: "exit", code: 3 }]));
    await until(
      () => host?.events.some((e) => e.type === "droid_status" && e.status === "exited") === true,
      "the exit event",
    );
    const exit = host.events.find((e) => e.type === "droid_status" && e.status === "exited");
    expect(exit).toMatchObject({ exit_code: 3 });
    // Not before its last event is stored.
    await new Promise((r) => setTimeout(r, 300));
    expect(runner.exitCode).toBeNull();
    host.ack(exit?.seq ?? 0);
    expect(await exited(runner)).toBe(3);
  }, 40_000);

  it("under the process runtime, ends its agent when the host-agent goes away", async () => {
    host = new HostSide(path, { start: true });
    await host.start();
    runner = startRunner({ [AgentEnv.exitWithParent]: "1" });
    await until(() => host?.outputs().some((d) => d.op === "ready") === true, "the agent's ready line");
    runner.stdin.end();
    expect(await exited(runner)).not.toBeNull();
  }, 40_000);
});
