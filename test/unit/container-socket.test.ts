import { spawn } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ContainerHandlers,
  RelaySocketServer,
  SocketSecrets,
} from "../../host-agent/src/socket/index.js";
import type { CallerToolRequest } from "../../host-agent/src/socket/types.js";
import { createLogger } from "../../lib/log.js";
import type { HandlerContext } from "../../lib/rpc/peer.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { type CallerToolsConfig, failureToRpcError } from "../../protocol/caller-tools.js";
import type { JsonValue } from "../../protocol/json.js";
import { Limits } from "../../protocol/limits.js";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import type { RunnerAgent } from "../../protocol/socket.js";
import { type Msg, RawClient } from "../support/raw-socket-client.js";

const TOKEN = "s3cret-token";
const RUNNER_TOKEN = "runner-s3cret";
const SESSION = "ses_000000000000000000000001";
const OTHER_SESSION = "ses_000000000000000000000002";
const OTHER_TOKEN = "other-s3cret";
const PROJECT = "prj_000000000000000000000001";

/** The secrets of a project socket with two sessions. */
function secrets(): SocketSecrets {
  const s = new SocketSecrets(RUNNER_TOKEN);
  s.addSession(SESSION, TOKEN);
  s.addSession(OTHER_SESSION, OTHER_TOKEN);
  return s;
}
const logger = createLogger({ name: "relay-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

/** The raw client with this file's secrets. */
class TestClient extends RawClient {
  static override open(path: string): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const s = connect(path, () => resolve(new TestClient(s)));
      s.once("error", reject);
    });
  }

  async helloAs(role: "client" | "runner" = "client", agents?: RunnerAgent[], token = TOKEN): Promise<Msg> {
    return this.hello({
      ...(role === "runner" ? { runner_token: RUNNER_TOKEN } : { session_token: token }),
      role,
      client: { name: "test", version: "0" },
      agents,
    });
  }
}

type Handler = (call: CallerToolRequest, ctx: HandlerContext, sessionId: string) => Promise<JsonValue>;

let dir: string;
let path: string;
let server: RelaySocketServer;
let handler: Handler;
const clients: TestClient[] = [];

const config: CallerToolsConfig = {
  caller_id: "ant",
  tools: [{ name: "echo", description: "echoes" }],
  timeout_ms: 60_000,
  backstop_ms: 135_000,
};

/** What the runner side reported, for the tests that check it. */
const runnerSeen: { agents: RunnerAgent[]; events: { session: string; event: AgentEvent }[]; gone: number } =
  {
    agents: [],
    events: [],
    gone: 0,
  };

function handlers(): ContainerHandlers {
  return {
    callerTool: (sessionId, call, ctx) => handler(call, ctx, sessionId),
    oubliette: async () => {
      throw new Error("no Oubliette tools here");
    },
    runnerConnected: (_connection, agents) => {
      runnerSeen.agents = agents;
    },
    runnerGone: () => {
      runnerSeen.gone += 1;
    },
    agentEvents: (session, events) => runnerSeen.events.push(...events.map((event) => ({ session, event }))),
  };
}

async function open(): Promise<TestClient> {
  const c = await TestClient.open(path);
  clients.push(c);
  return c;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "relay-test-"));
  path = join(dir, "relay.sock");
  handler = async (call) => ({ echoed: call.arguments });
  runnerSeen.events = [];
  runnerSeen.gone = 0;
  server = new RelaySocketServer({
    path,
    projectId: PROJECT,
    auth: secrets(),
    logger,
    handlers: handlers(),
  });
  await server.start();
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe("RelaySocketServer", () => {
  it("creates the socket world-writable and replaces a stale socket", async () => {
    expect((await stat(path)).mode & 0o777).toBe(0o666);
    // A process killed without cleanup leaves its socket file behind.
    const stalePath = join(dir, "stale.sock");
    const child = spawn(
      process.execPath,
      ["-e", `require("net").createServer().listen(${JSON.stringify(stalePath)}, () => console.log("up"))`],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((resolve) => child.stdout.once("data", resolve));
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    expect((await stat(stalePath)).isSocket()).toBe(true);
    const again = new RelaySocketServer({
      path: stalePath,
      projectId: PROJECT,
      auth: secrets(),
      logger,
      handlers: handlers(),
    });
    await again.start();
    try {
      const c = await TestClient.open(stalePath);
      clients.push(c);
      expect((await c.helloAs()).result).toEqual({
        session_id: SESSION,
        project_id: PROJECT,
        protocol_version: 4,
      });
    } finally {
      await again.close();
    }
  });

  it("requires hello before caller_tool but answers ping", async () => {
    const c = await open();
    c.request(1, "caller_tool", { tool: "echo", arguments: {} });
    expect((await c.response(1)).error?.code).toBe(RpcErrorCode.Unauthenticated);
    c.request(2, "ping");
    expect((await c.response(2)).result).toEqual({});
    const hello = await c.helloAs();
    expect(hello.result).toEqual({ session_id: SESSION, project_id: PROJECT, protocol_version: 4 });
    c.request(3, "caller_tool", { tool: "echo", arguments: { a: 1 } });
    expect((await c.response(3)).result).toEqual({ echoed: { a: 1 } });
    expect(server.connectionCount).toBe(1);
  });

  it("a request right after hello in the same chunk is already authenticated", async () => {
    const c = await open();
    c.socket.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "hello", params: { session_token: TOKEN } })}\n${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "caller_tool", params: { tool: "echo" } })}\n`,
    );
    expect((await c.response(2)).result).toEqual({ echoed: {} });
  });

  it("rejects a wrong token and closes after repeated failures", async () => {
    const c = await open();
    for (let i = 1; i <= 2; i++) {
      c.request(i, "hello", { session_token: "wrong" });
      const r = await c.response(i);
      expect(r.error?.code).toBe(RpcErrorCode.Unauthenticated);
      expect(JSON.stringify(r)).not.toContain(TOKEN);
    }
    expect(c.closed).toBe(false);
    c.request(3, "hello", { session_token: "wrong-again" });
    expect((await c.response(3)).error?.code).toBe(RpcErrorCode.Unauthenticated);
    await c.waitClosed();
  });

  it("answers protocol faults with the right codes and keeps the connection", async () => {
    const c = await open();
    await c.helloAs();
    c.sendRaw("{not json");
    expect((await c.take()).error?.code).toBe(RpcErrorCode.ParseError);
    c.send([{ jsonrpc: "2.0", id: 1, method: "ping" }]);
    expect((await c.take()).error?.code).toBe(RpcErrorCode.InvalidRequest);
    // A response to nothing we asked is dropped (responses are never answered).
    c.send({ jsonrpc: "2.0", id: 7, result: {} });
    c.send({ jsonrpc: "1.0", id: 8, method: "ping" });
    expect((await c.response(8)).error?.code).toBe(RpcErrorCode.InvalidRequest);
    c.request(9, "no_such_method");
    expect((await c.response(9)).error?.code).toBe(RpcErrorCode.MethodNotFound);
    c.request(10, "caller_tool", { tool: 5 });
    const bad = await c.response(10);
    expect(bad.error?.code).toBe(RpcErrorCode.InvalidParams);
    expect(bad.error?.message).toContain("tool");
    c.request(11, "caller_tool", { tool: "echo", arguments: "nope" });
    expect((await c.response(11)).error?.code).toBe(RpcErrorCode.InvalidParams);
    c.request(12, "hello", {});
    expect((await c.response(12)).error?.code).toBe(RpcErrorCode.InvalidParams);
    c.sendRaw(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 13,
        method: "ping",
        params: { pad: "x".repeat(Limits.lineBytes) },
      }),
    );
    const big = await c.take();
    expect(big.error?.code).toBe(RpcErrorCode.InvalidRequest);
    expect(big.id).toBeNull();
    // An id that is neither a string nor an integer: invalid, answered with id null (never ignored).
    c.send({ jsonrpc: "2.0", id: { nested: true }, method: "ping" });
    const badId = await c.take();
    expect(badId.error?.code).toBe(RpcErrorCode.InvalidRequest);
    expect(badId.id).toBeNull();
    // 100,000 levels of nesting: a clear error, not a stack overflow.
    c.sendRaw(
      `{"jsonrpc":"2.0","id":15,"method":"ping","params":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
    );
    const deep = await c.take();
    expect(deep.error?.code).toBe(RpcErrorCode.InvalidRequest);
    expect(deep.error?.message).toMatch(/nested deeper than 64/);
    // A method name far over the limit is refused, and echoed back cut short.
    c.request(16, `m${"x".repeat(500_000)}`);
    const huge = await c.response(16);
    expect(huge.error?.code).toBe(RpcErrorCode.InvalidRequest);
    expect(huge.error?.message.length).toBeLessThan(300);
    c.request(17, `no_such_${"y".repeat(100)}`);
    const unknown = await c.response(17);
    expect(unknown.error?.code).toBe(RpcErrorCode.MethodNotFound);
    expect(unknown.error?.message.length).toBeLessThan(100);
    // Notifications get no answer; the next request still works.
    c.send({ jsonrpc: "2.0", method: "notifications/whatever" });
    c.request(14, "caller_tool", { tool: "echo", arguments: { still: "alive" } });
    expect(await c.take()).toMatchObject({ id: 14, result: { echoed: { still: "alive" } } });
  });

  it("answers 20 concurrent calls resolved in reverse order, each with its own result", async () => {
    const waiting: Array<{ call: CallerToolRequest; resolve: (o: JsonValue) => void }> = [];
    let allArrived: () => void = () => {};
    const arrived = new Promise<void>((r) => {
      allArrived = r;
    });
    handler = (call) =>
      new Promise((resolve) => {
        waiting.push({ call, resolve });
        if (waiting.length === 20) allArrived();
      });
    const c = await open();
    await c.helloAs();
    for (let i = 0; i < 20; i++) c.request(i, "caller_tool", { tool: "echo", arguments: { n: i } });
    await arrived;
    for (const w of [...waiting].reverse()) w.resolve({ n: w.call.arguments.n ?? null });
    const order: unknown[] = [];
    for (let k = 0; k < 20; k++) {
      const m = await c.take();
      expect(m.result).toEqual({ n: m.id });
      order.push(m.id);
    }
    // Answered as they were resolved, not in the order asked: nothing waits for call 0.
    expect(new Set(order).size).toBe(20);
    expect(order.indexOf(0)).toBeGreaterThan(order.indexOf(10));
  });

  it("a slow call does not block a fast one", async () => {
    let releaseSlow: () => void = () => {};
    handler = async (call) => {
      if (call.tool === "slow") await new Promise<void>((r) => (releaseSlow = r));
      return call.tool;
    };
    const c = await open();
    await c.helloAs();
    c.request("s", "caller_tool", { tool: "slow" });
    c.request("f", "caller_tool", { tool: "fast" });
    expect(await c.take()).toMatchObject({ id: "f", result: "fast" });
    releaseSlow();
    expect(await c.take()).toMatchObject({ id: "s", result: "slow" });
  });

  it("a peer that stops reading gets every answer once it reads again", async () => {
    handler = async (call) => ({ n: call.arguments.n ?? null, pad: "p".repeat(3000) });
    const c = await open();
    await c.helloAs();
    c.socket.pause();
    const total = 400; // ~1.2 MB of answers: far more than the socket buffers hold
    for (let i = 0; i < total; i++) c.request(i, "caller_tool", { tool: "echo", arguments: { n: i } });
    await new Promise((r) => setTimeout(r, 300));
    c.socket.resume();
    const seen = new Set<unknown>();
    for (let k = 0; k < total; k++) {
      const m = await c.take();
      expect((m.result as { n: unknown }).n).toBe(m.id);
      seen.add(m.id);
    }
    expect(seen.size).toBe(total);
    expect(c.closed).toBe(false);
  });

  it("pushes caller_tools_config after hello and on every update", async () => {
    const early = await open();
    await early.helloAs();
    server.setCallerToolsConfig(SESSION, config);
    expect(await early.take((m) => m.method === "caller_tools_config")).toEqual({
      jsonrpc: "2.0",
      method: "caller_tools_config",
      params: config,
    });
    const late = await open();
    const unauthenticated = await open();
    await late.helloAs();
    const pushed = await late.take((m) => m.method === "caller_tools_config");
    expect(pushed.params).toEqual(config);
    const next = { ...config, tools: [...config.tools, { name: "more" }] };
    server.setCallerToolsConfig(SESSION, next);
    expect((await early.take((m) => m.method === "caller_tools_config")).params).toEqual(next);
    expect((await late.take((m) => m.method === "caller_tools_config")).params).toEqual(next);
    unauthenticated.request(1, "ping");
    await unauthenticated.response(1);
    await expect(unauthenticated.take((m) => m.method === "caller_tools_config", 200)).rejects.toThrow();
  });

  it("turns a failure outcome into error -32000 with data.reason", async () => {
    handler = async () => {
      throw failureToRpcError("caller_error", "recipient not found");
    };
    const c = await open();
    await c.helloAs();
    c.request(1, "caller_tool", { tool: "send" });
    expect((await c.response(1)).error).toEqual({
      code: RpcErrorCode.ServerError,
      message: "recipient not found",
      data: { reason: "caller_error" },
    });
  });

  it("refuses a result larger than the line limit instead of sending it", async () => {
    handler = async () => "x".repeat(Limits.lineBytes);
    const c = await open();
    await c.helloAs();
    c.request(1, "caller_tool", { tool: "big" });
    const r = await c.response(1);
    expect(r.error?.code).toBe(RpcErrorCode.ServerError);
    expect(r.error?.data).toEqual({ reason: "too_large" });
  });

  it("aborts the handler's signal when the connection closes, and when the peer cancels", async () => {
    const reasons: number[] = [];
    let started: () => void = () => {};
    let sawStart = new Promise<void>((r) => (started = r));
    let aborted: () => void = () => {};
    let sawAbort = new Promise<void>((r) => (aborted = r));
    handler = (_call, ctx) =>
      new Promise(() => {
        started();
        ctx.signal.addEventListener("abort", () => {
          reasons.push((ctx.signal.reason as { code: number }).code);
          aborted();
        });
      });
    const c = await open();
    await c.helloAs();
    c.request("a", "caller_tool", { tool: "hang" });
    await sawStart;
    c.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "a", reason: "droid gave up" },
    });
    await sawAbort;
    sawStart = new Promise<void>((r) => (started = r));
    sawAbort = new Promise<void>((r) => (aborted = r));
    c.request("b", "caller_tool", { tool: "hang" });
    await sawStart;
    c.socket.destroy();
    await sawAbort;
    expect(reasons).toEqual([RpcErrorCode.RequestCancelled, RpcErrorCode.ConnectionClosed]);
  });

  it("close() ends every connection and removes the socket", async () => {
    handler = () => new Promise(() => {});
    const c = await open();
    await c.helloAs();
    c.request(1, "caller_tool", { tool: "hang" });
    await server.close();
    await c.waitClosed();
    await expect(stat(path)).rejects.toThrow();
    expect(server.connectionCount).toBe(0);
  });

  it("closes a connection that never says hello", async () => {
    await server.close();
    server = new RelaySocketServer({
      path,
      projectId: PROJECT,
      auth: secrets(),
      logger,
      helloTimeoutMs: 100,
      handlers: handlers(),
    });
    await server.start();
    const c = await open();
    await c.waitClosed(2000);
  });

  it("caps the connections of one container; the host keeps serving the ones it has", async () => {
    await server.close();
    server = new RelaySocketServer({
      path,
      projectId: PROJECT,
      auth: secrets(),
      logger,
      maxConnections: 8,
      handlers: handlers(),
    });
    await server.start();
    const first = await open();
    await first.helloAs();
    const flood = await Promise.all(Array.from({ length: 40 }, () => open()));
    await new Promise((r) => setTimeout(r, 200));
    expect(server.connectionCount).toBeLessThanOrEqual(8);
    expect(flood.filter((c) => c.closed).length).toBeGreaterThanOrEqual(40 - 7);
    first.request(1, "caller_tool", { tool: "echo", arguments: { ok: 1 } });
    expect((await first.response(1)).result).toEqual({ echoed: { ok: 1 } });
    // Once the flood is gone, new connections are served again.
    for (const c of flood) c.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const later = await open();
    expect((await later.helloAs()).result).toMatchObject({ session_id: SESSION });
  });

  it("takes agent events only from the runner and reports its agents and its going", async () => {
    const client = await open();
    await client.helloAs("client");
    const events: AgentEvent[] = [{ seq: 1, type: "droid_log", text: "from a client" }];
    client.send({ jsonrpc: "2.0", method: "agent_events", params: { session_id: SESSION, events } });
    const runner = await open();
    const agents: RunnerAgent[] = [
      { session_id: SESSION, session_token: TOKEN, status: "running", delivered_message_seq: 3 },
    ];
    expect((await runner.helloAs("runner", agents)).result).toEqual({
      project_id: PROJECT,
      protocol_version: 4,
    });
    runner.send({
      jsonrpc: "2.0",
      method: "agent_events",
      params: { session_id: OTHER_SESSION, events: [{ seq: 2, type: "droid_log", text: "from the runner" }] },
    });
    runner.request("p", "ping");
    await runner.response("p");
    expect(runnerSeen.agents).toEqual(agents);
    expect(runnerSeen.events).toEqual([
      { session: OTHER_SESSION, event: { seq: 2, type: "droid_log", text: "from the runner" } },
    ]);
    runner.socket.destroy();
    await expect.poll(() => runnerSeen.gone).toBe(1);
  });

  it("binds each client to the session whose secret it presented, never to a body's claim", async () => {
    const seen: string[] = [];
    handler = async (_call, _ctx, sessionId) => {
      seen.push(sessionId);
      return sessionId;
    };
    const mine = await open();
    await mine.helloAs("client");
    const other = await open();
    expect((await other.helloAs("client", undefined, OTHER_TOKEN)).result).toMatchObject({
      session_id: OTHER_SESSION,
    });
    // A session id in the body changes nothing: the connection's session is the one that counts.
    other.request(1, "caller_tool", { tool: "echo", arguments: {}, session_id: SESSION });
    expect((await other.response(1)).result).toBe(OTHER_SESSION);
    mine.request(2, "caller_tool", { tool: "echo", arguments: {} });
    expect((await mine.response(2)).result).toBe(SESSION);
    // The runner's secret is not a session's, and a session's is not the runner's.
    const fake = await open();
    fake.request(3, "hello", { role: "runner", runner_token: TOKEN });
    expect((await fake.response(3)).error?.code).toBe(RpcErrorCode.Unauthenticated);
    fake.request(4, "hello", { session_token: RUNNER_TOKEN });
    expect((await fake.response(4)).error?.code).toBe(RpcErrorCode.Unauthenticated);
    // The runner makes no caller tool calls of its own.
    const runner = await open();
    await runner.helloAs("runner", []);
    runner.request(5, "caller_tool", { tool: "echo", arguments: {} });
    expect((await runner.response(5)).error?.code).toBe(RpcErrorCode.Unauthenticated);
    // Each session's config goes to its own clients only.
    server.setCallerToolsConfig(OTHER_SESSION, { ...config, caller_id: "bee" });
    const note = await other.take((m) => m.method === "caller_tools_config");
    expect(note.params).toMatchObject({ caller_id: "bee" });
    expect(seen).toEqual([OTHER_SESSION, SESSION]);
    // A dropped session's clients are closed: its secret is void.
    server.dropSession(OTHER_SESSION);
    await other.waitClosed();
    expect(mine.closed).toBe(false);
  });
});
