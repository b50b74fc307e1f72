/**
 * A permission question along the whole host chain, without Docker: a real runner (container-client
 * in runner mode) and its scripted droid, the host-agent's own pieces (the container socket, the
 * runner link, the session runtime and its tunnel) in this process, and a session object played
 * by a WebSocket server here. The droid's question reaches the session object as `approval`; the
 * host-agent then restarts (its pieces are dropped and made anew, re-adopting the session from
 * the runner's hello, as after a real restart); the runner asks again under the same approval
 * id, the new tunnel relays it, and the session object's decision reaches the droid once.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import type { z } from "zod";
import { RunnerLink } from "../../host-agent/src/sessions/runner-link.js";
import { SessionRuntime } from "../../host-agent/src/sessions/session-runtime.js";
import { RelaySocketServer, SocketSecrets } from "../../host-agent/src/socket/index.js";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import type { ApprovalDecision } from "../../protocol/approvals.js";
import { failureToRpcError } from "../../protocol/caller-tools.js";
import { Limits } from "../../protocol/limits.js";
import { AgentEnv } from "../../protocol/socket.js";
import {
  droidMessageId,
  HEARTBEAT_PING,
  HEARTBEAT_PONG,
  type TunnelApprovalParamsSchema,
  TunnelMethods,
} from "../../protocol/tunnel.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const RUNNER_TOKEN = "runner-token";
const SESSION = "ses_0000000000000000000000d1";
const SESSION_TOKEN = "token-d1";
const logger = createLogger({
  name: "approval-chain-it",
  level: process.env.TEST_LOG_LEVEL ?? "silent",
  fd: 2,
});

interface Asked {
  id: string | number;
  params: z.infer<typeof TunnelApprovalParamsSchema>;
  tunnel: number;
  decide(decision: ApprovalDecision): void;
}

/** The session's Durable Object, as small as this test needs it: hello, events, approvals held for the test. */
class SessionObject {
  readonly events: AgentEvent[] = [];
  readonly asked: Asked[] = [];
  tunnels = 0;
  #peer: RpcPeer | null = null;
  readonly #server = new WebSocketServer({ host: "127.0.0.1", port: 0 });

  constructor() {
    this.#server.on("connection", (ws) => this.#serve(ws));
  }

  async url(): Promise<string> {
    if (!this.#server.address()) await new Promise((resolve) => this.#server.once("listening", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  outputs(): Record<string, unknown>[] {
    return this.events.flatMap((e) =>
      e.type === "droid_output" && e.data ? [e.data as Record<string, unknown>] : [],
    );
  }

  async message(seq: number, text: string): Promise<void> {
    if (!this.#peer) throw new Error("no tunnel");
    await this.#peer.request(
      TunnelMethods.droidMessage,
      { seq, text },
      { id: droidMessageId(seq), timeoutMs: 30_000 },
    );
  }

  async close(): Promise<void> {
    for (const ws of this.#server.clients) ws.terminate();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #serve(ws: WebSocket): void {
    const tunnel = ++this.tunnels;
    const peer = new RpcPeer({
      send: (text) => {
        if (ws.readyState !== ws.OPEN) return false;
        ws.send(text);
        return true;
      },
      maxMessageBytes: Limits.frameBytes,
      logger,
    });
    peer.handle(TunnelMethods.sessionHello, () => {
      this.#peer = peer;
      const stored = this.events.at(-1)?.seq ?? 0;
      const config = { caller_id: null, tools: [], timeout_ms: 60_000, backstop_ms: 135_000 };
      return { session_id: SESSION, stored_event_seq: stored, config };
    });
    peer.handle(TunnelMethods.sessionEvents, (params) => {
      for (const event of params.events)
        if (event.seq > (this.events.at(-1)?.seq ?? 0)) this.events.push(event);
      return { stored_seq: this.events.at(-1)?.seq ?? 0 };
    });
    peer.handle(
      TunnelMethods.approval,
      (params, ctx) =>
        new Promise<ApprovalDecision>((decide) => {
          this.asked.push({ id: ctx.id, params, tunnel, decide });
        }),
    );
    ws.on("message", (data) => {
      const text = String(data);
      if (text === HEARTBEAT_PING) ws.send(HEARTBEAT_PONG);
      else peer.receive(text);
    });
    ws.on("close", () => peer.close("the tunnel closed"));
  }
}

/** One host-agent's pieces for the project's container: its socket, its runner link, the session. */
class HostAgent {
  session: SessionRuntime | null = null;
  readonly link: RunnerLink;
  readonly #server: RelaySocketServer;
  readonly #make: () => SessionRuntime;

  constructor(path: string, workerUrl: string) {
    this.#make = () =>
      new SessionRuntime({
        sessionId: SESSION,
        sessionToken: SESSION_TOKEN,
        workerUrl,
        hostToken: "host-token",
        hostId: "host-1",
        logger,
        runner: this.link,
        pushConfig: () => {},
        onClosed: () => {},
        timing: { heartbeatMs: 60_000, maxReconnectDelayMs: 100 },
      });
    this.link = new RunnerLink({
      logger,
      // A restarted host-agent re-adopts the sessions the runner reports.
      onAgents: (agents) => {
        for (const agent of agents) {
          if (agent.session_id !== SESSION || this.session) continue;
          this.session = this.#make();
          this.session.adopt(agent);
        }
      },
    });
    const secrets = new SocketSecrets(RUNNER_TOKEN);
    secrets.addSession(SESSION, SESSION_TOKEN);
    const session = (id: string) => {
      if (id !== SESSION || !this.session)
        throw failureToRpcError("session_ended", "the session has ended on this host");
      return this.session;
    };
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
        admitRunner: (connection) => this.link.admit(connection),
        runnerConnected: (connection, agents) => this.link.attach(connection, agents),
        runnerGone: (connection) => this.link.detach(connection),
        agentEvents: (id, events) => (id === SESSION ? this.session?.agentEvents(events) : undefined),
        approval: async (params, ctx) => session(params.session_id).approval(params, ctx),
      },
    });
  }

  start(): Promise<void> {
    return this.#server.start();
  }

  /** Starts the session's agent (a fresh session, not a re-adopted one). */
  startSession(): void {
    this.session = this.#make();
    this.session.start({ cwd: repoRoot, env: {}, agent: { runtime: "scripted", approvals: "ask" } });
  }

  /** Goes away leaving the agent running, as a host-agent that stops does. */
  async stop(): Promise<void> {
    await this.session?.detach();
    this.link.close();
    await this.#server.close();
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
let object: SessionObject | undefined;
const hosts: HostAgent[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "approval-chain-"));
  path = join(dir, "relay.sock");
});

afterEach(async () => {
  if (runner && runner.exitCode === null) {
    runner.kill("SIGKILL");
    await new Promise((resolve) => runner?.once("exit", resolve));
  }
  runner = undefined;
  for (const host of hosts.splice(0)) await host.stop();
  await object?.close();
  object = undefined;
  await rm(dir, { recursive: true, force: true });
});

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

async function hostAgent(workerUrl: string): Promise<HostAgent> {
  const host = new HostAgent(path, workerUrl);
  hosts.push(host);
  await host.start();
  return host;
}

describe("approval chain: runner, host-agent, session tunnel", () => {
  it("relays a droid's question to the session object, again after a host-agent restart, and its decision back once", async () => {
    const sessionObject = new SessionObject();
    object = sessionObject;
    const workerUrl = await sessionObject.url();
    const first = await hostAgent(workerUrl);
    runner = startRunner();
    first.startSession();
    await until(() => sessionObject.outputs().some((d) => d.op === "ready"), "the droid's ready line");

    const request = { kind: "shell", command: "echo relayed", summary: "say relayed" } as const;
    await sessionObject.message(1, JSON.stringify({ id: "chain", steps: [{ op: "ask", request }] }));
    await until(() => sessionObject.asked.length === 1, "the approval at the session object");
    const asked = sessionObject.asked[0] as Asked;
    // The tunnel's request id is the approval id.
    expect(asked.id).toBe(asked.params.approval_id);
    expect(asked.params).toEqual({ approval_id: asked.params.approval_id, agent: "scripted", request });

    // The host-agent restarts; the runner and its droid keep running, the question waiting.
    await first.stop();
    const second = await hostAgent(workerUrl);
    await until(() => sessionObject.asked.length === 2, "the approval asked again");
    const again = sessionObject.asked[1] as Asked;
    expect(again.tunnel).toBeGreaterThan(asked.tunnel);
    expect(again.id).toBe(asked.id);
    expect(again.params).toEqual(asked.params);
    expect(second.session).not.toBeNull();

    again.decide({ decision: "allow", scope: "once", by: "answer" });
    await until(
      () => sessionObject.outputs().some((d) => d.op === "done" && d.id === "chain"),
      "the script's end",
    );
    expect(sessionObject.outputs().filter((d) => d.op === "approval")).toEqual([
      { op: "approval", id: expect.any(String), decision: "allow", scope: "once", by: "answer" },
    ]);
    expect(sessionObject.outputs().find((d) => d.op === "ran")).toMatchObject({
      exit_code: 0,
      stdout: "relayed\n",
    });
    expect(sessionObject.asked).toHaveLength(2);
  }, 90_000);
});
