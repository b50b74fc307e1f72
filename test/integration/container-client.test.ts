/**
 * End to end across real processes: a RelaySocketServer in this process (the host-agent's side),
 * the scripted droid as a child process, and the container-client it starts over MCP stdio.
 * Calls are durable in the container-client: a host side that goes away mid-call (a host-agent
 * restart) gets the call again, under the same call id, from the reconnected client.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ContainerHandlers,
  RelaySocketServer,
  SocketSecrets,
} from "../../host-agent/src/socket/index.js";
import type { CallerToolRequest } from "../../host-agent/src/socket/types.js";
import { createLogger } from "../../lib/log.js";
import type { HandlerContext } from "../../lib/rpc/peer.js";
import { type CallerToolsConfig, failureToRpcError } from "../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../protocol/json.js";
import { LineSplitter } from "../../protocol/line-splitter.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN = "integration-token";
const SESSION_ID = "ses_00000000000000000000000a";
const logger = createLogger({ name: "relay-it", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

type Line = Record<string, unknown>;
type Handler = (call: CallerToolRequest, ctx: HandlerContext) => Promise<JsonValue>;

/** The scripted droid as a child process: scripts in on stdin, JSON lines out on stdout. */
class Droid {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: Line[] = [];
  #wakers: Array<() => void> = [];
  #seq = 0;
  #stderr = "";

  constructor(env: Record<string, string>) {
    this.#child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/scripted-droid/main.ts"], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
    });
    const splitter = new LineSplitter(64 * 1024 * 1024);
    this.#child.stdout.on("data", (chunk: Buffer) => {
      for (const e of splitter.push(chunk)) {
        if (e.kind !== "line") continue;
        const line = JSON.parse(e.text) as Line;
        // The runner's end-of-turn marker, not a step's output.
        if (line.type !== "turn_completed") this.#lines.push(line);
      }
      const wakers = this.#wakers;
      this.#wakers = [];
      for (const wake of wakers) wake();
    });
    this.#child.stderr.on("data", (chunk: Buffer) => {
      // Keep only the tail, for failure messages.
      this.#stderr = (this.#stderr + chunk.toString()).slice(-8000);
    });
  }

  /** Sends one droid message holding `script`; returns its seq. */
  send(script: unknown): number {
    this.#seq += 1;
    const text = typeof script === "string" ? script : JSON.stringify(script);
    this.#child.stdin.write(`${JSON.stringify({ type: "message", seq: this.#seq, text })}\n`);
    return this.#seq;
  }

  /** Removes and returns the first output line matching `pred`, waiting up to `ms`. */
  async take(pred: (line: Line) => boolean, ms = 10_000): Promise<Line> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.#lines.findIndex(pred);
      if (i >= 0) return this.#lines.splice(i, 1)[0] as Line;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `no matching droid line; unread: ${JSON.stringify(this.#lines)}\nstderr: ${this.#stderr}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wakers.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Runs a script and returns its lines up to its `done` (for scripts run one at a time). */
  async run(script: unknown, ms = 10_000): Promise<Line[]> {
    const seq = this.send(script);
    await this.take((l) => l.op === "done" && l.seq === seq, ms);
    return this.#lines.splice(0);
  }

  /** Ends stdin and waits for the droid to exit (killing it if it does not). */
  async stop(): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => this.#child.once("exit", (code) => resolve(code)));
    this.#child.stdin.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 10_000);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

let dir: string;
let path: string;
let server: RelaySocketServer;
let handler: Handler = async (call) => call.arguments;
let droid: Droid;

const baseConfig: CallerToolsConfig = {
  caller_id: "ant",
  tools: [
    {
      name: "send_response",
      description: "Send message",
      inputSchema: { type: "object", properties: { message: { type: "string" } } },
    },
    { name: "echo" },
    { name: "fail" },
    { name: "hang" },
    { name: "gather" },
  ],
  timeout_ms: 5_000,
  backstop_ms: 20_000,
};

/** What the session object would answer about Oubliette's tools: keys it knows, a tool, a refusal. */
const oublietteCalls: { method: string; params: JsonObject }[] = [];
/** More tools the key allows from now on (the session object may change what it serves). */
let moreOublietteTools: JsonValue[] = [];
async function oublietteAnswer(method: string, params: JsonObject): Promise<JsonValue> {
  oublietteCalls.push({ method, params });
  if (params.api_key !== "good-key")
    throw new RpcError(RpcErrorCode.InvalidApiKey, "invalid or expired API key");
  if (method === "oubliette_tools") {
    return {
      tools: [
        {
          name: "workspace",
          description: "Workspaces",
          inputSchema: { type: "object", properties: { action: { type: "string", enum: ["list"] } } },
        },
        ...moreOublietteTools,
      ],
    };
  }
  const args = params.arguments as JsonObject;
  if (args.action !== "list")
    throw new RpcError(RpcErrorCode.ToolNotAllowed, "tool not allowed for this key's scope");
  return {
    content: [{ type: "text", text: '{"workspaces":["default"]}' }],
    structuredContent: { workspaces: ["default"] },
  };
}

const handlers: ContainerHandlers = {
  callerTool: (_session, call, ctx) => handler(call, ctx),
  oubliette: (_session, method, params) => oublietteAnswer(method, params),
  runnerConnected: () => {},
  runnerGone: () => {},
  agentEvents: () => {},
};

async function startServer(config: CallerToolsConfig = baseConfig): Promise<RelaySocketServer> {
  const secrets = new SocketSecrets("runner-secret");
  secrets.addSession(SESSION_ID, TOKEN);
  const s = new RelaySocketServer({
    path,
    projectId: "prj_000000000000000000000001",
    auth: secrets,
    logger,
    handlers,
  });
  s.setCallerToolsConfig(SESSION_ID, config);
  await s.start();
  return s;
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const textOf = (line: Line) => (line.content as Array<{ text?: string }> | undefined)?.[0]?.text;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cc-it-"));
  path = join(dir, "relay.sock");
  server = await startServer();
  droid = new Droid({
    OUBLIETTE_SOCKET: path,
    OUBLIETTE_SESSION_TOKEN: TOKEN,
    OUBLIETTE_CLIENT_COMMAND: JSON.stringify(["node", "--import", "tsx", "container-client/src/main.ts"]),
    OUBLIETTE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
  });
  await droid.take((l) => l.op === "ready", 20_000);
}, 30_000);

afterAll(async () => {
  const code = await droid?.stop();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
  expect(code).toBe(0);
}, 20_000);

describe("container-client end to end", () => {
  it("lists the caller's tools with their schemas (default {type: object})", async () => {
    const lines = await droid.run({ steps: [{ op: "wait_tool", name: "ant_echo" }, { op: "list_tools" }] });
    expect(lines.find((l) => l.op === "wait_tool")).toMatchObject({ found: true });
    const listed = lines.find((l) => l.op === "list_tools")?.tools as Array<Record<string, unknown>>;
    expect(listed.map((t) => t.name)).toEqual([
      "ant_send_response",
      "ant_echo",
      "ant_fail",
      "ant_hang",
      "ant_gather",
    ]);
    expect(listed[0]).toEqual({
      name: "ant_send_response",
      description: "Send message",
      inputSchema: { type: "object", properties: { message: { type: "string" } } },
    });
    expect(listed[1]?.inputSchema).toEqual({ type: "object" });
  });

  it("re-declaration replaces the list and the droid sees list_changed", async () => {
    const seq = droid.send({ op: "wait_tool", name: "ant_later", timeout_ms: 10_000 });
    await new Promise((r) => setTimeout(r, 200));
    server.setCallerToolsConfig(SESSION_ID, {
      ...baseConfig,
      tools: [...baseConfig.tools.slice(1), { name: "later" }],
    });
    const waited = await droid.take((l) => l.op === "wait_tool" && l.name === "ant_later");
    expect(waited.found).toBe(true);
    await droid.take((l) => l.op === "done" && l.seq === seq);
    const lines = await droid.run({ op: "list_tools" });
    const names = ((lines[0]?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain("ant_later");
    expect(names).not.toContain("ant_send_response");
    server.setCallerToolsConfig(SESSION_ID, baseConfig);
    await droid.run({ op: "wait_tool", name: "ant_send_response" });
  });

  it("relays a call and maps results: JSON, string, and MCP results pass through", async () => {
    handler = async (call): Promise<JsonValue> => {
      if (call.arguments.kind === "string") return "plain text";
      if (call.arguments.kind === "mcp")
        return { content: [{ type: "text", text: "from mcp" }], isError: false };
      return { echoed: call.arguments };
    };
    const lines = await droid.run({
      steps: [
        { op: "call", id: "j", name: "ant_echo", arguments: { message: "hi" } },
        { op: "call", id: "s", name: "ant_echo", arguments: { kind: "string" } },
        { op: "call", id: "m", name: "ant_echo", arguments: { kind: "mcp" } },
        { op: "call", id: "u", name: "ant_nope" },
      ],
    });
    const byId = (id: string) => lines.find((l) => l.op === "call" && l.id === id) as Line;
    expect(byId("j")).toMatchObject({
      is_error: false,
      content: [{ type: "text", text: '{"echoed":{"message":"hi"}}' }],
    });
    expect(byId("s")).toMatchObject({ is_error: false, content: [{ type: "text", text: "plain text" }] });
    expect(byId("m")).toMatchObject({ is_error: false, content: [{ type: "text", text: "from mcp" }] });
    expect(byId("u").is_error).toBe(true);
    expect(textOf(byId("u"))).toContain("unknown tool: ant_nope");
  });

  it("a caller error reads as the caller's own message", async () => {
    handler = async () => {
      throw failureToRpcError("caller_error", "recipient not found");
    };
    const lines = await droid.run({ op: "call", id: "f", name: "ant_fail" });
    expect(lines[0]).toMatchObject({ op: "call", id: "f", is_error: true });
    expect(textOf(lines[0] as Line)).toBe("recipient not found");
  });

  it("answers 50 concurrent calls resolved out of order, each with its own result", async () => {
    const waiting: Array<{ n: number; resolve: (o: JsonValue) => void }> = [];
    handler = (call) =>
      new Promise((resolve) => {
        waiting.push({ n: Number(call.arguments.n), resolve });
        if (waiting.length === 50) {
          // A fixed shuffle: every other one from the back, then the rest.
          const order = [...waiting].reverse().sort((a, b) => (a.n % 2) - (b.n % 2));
          for (const w of order) w.resolve({ n: w.n });
        }
      });
    const steps = Array.from({ length: 50 }, (_, n) => ({
      op: "call",
      id: `p${n}`,
      name: "ant_gather",
      arguments: { n },
    }));
    const lines = await droid.run({ op: "parallel", steps });
    const calls = lines.filter((l) => l.op === "call");
    expect(calls).toHaveLength(50);
    for (const line of calls) {
      expect(line.is_error).toBe(false);
      expect(textOf(line)).toBe(JSON.stringify({ n: Number(String(line.id).slice(1)) }));
    }
  });

  it("arguments over the size budget fail at once with a too_large error naming the limit", async () => {
    let called = false;
    handler = async () => {
      called = true;
      return null;
    };
    const lines = await droid.run({
      op: "call",
      id: "big",
      name: "ant_echo",
      arguments: { pad: "x".repeat(300 * 1024) },
    });
    expect(lines[0]).toMatchObject({ op: "call", id: "big", is_error: true });
    expect(textOf(lines[0] as Line)).toMatch(/is \d+ bytes encoded; the limit is 262144 bytes/);
    expect(called).toBe(false);
  });

  it("benchmarks a tool with bounded concurrency and no mismatches", async () => {
    handler = async (call) => call.arguments;
    const lines = await droid.run(
      { op: "bench", name: "ant_echo", count: 300, concurrency: 16, warmup: 10, arguments: { pad: "x" } },
      30_000,
    );
    const report = lines.find((l) => l.op === "bench") as Line;
    expect(report).toMatchObject({ count: 300, concurrency: 16, errors: 0, mismatches: 0 });
    expect(report.calls_per_s).toBeGreaterThan(0);
  }, 40_000);

  it("a host side that never answers ends at the client's backstop, with its reason, not a hang", async () => {
    handler = () => new Promise(() => {});
    server.setCallerToolsConfig(SESSION_ID, { ...baseConfig, timeout_ms: 300, backstop_ms: 800 });
    const lines = await droid.run({ op: "call", id: "t", name: "ant_hang" }, 15_000);
    expect(lines[0]).toMatchObject({ op: "call", id: "t", is_error: true });
    expect(textOf(lines[0] as Line)).toMatch(/no answer from the host-agent within 0.8 s/);
    server.setCallerToolsConfig(SESSION_ID, baseConfig);
  }, 20_000);

  it("the droid's cancellation reaches the host side as a cancel of that call", async () => {
    let cancelledWith: unknown;
    handler = (_call, ctx) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener("abort", () => {
          cancelledWith = ctx.signal.reason;
          reject(ctx.signal.reason);
        });
      });
    const lines = await droid.run({ op: "call", id: "gives-up", name: "ant_hang", timeout_ms: 300 }, 15_000);
    expect(lines[0]).toMatchObject({ op: "call", id: "gives-up" });
    await until(() => cancelledWith !== undefined);
    expect(cancelledWith).toMatchObject({ code: RpcErrorCode.RequestCancelled });
  }, 20_000);

  it("a call in flight when the host side restarts is re-sent under the same call id and answered once", async () => {
    const seen: string[] = [];
    handler = (call) => {
      seen.push(String(call.call_id));
      return new Promise(() => {});
    };
    const seq = droid.send({ op: "call", id: "inflight", name: "ant_hang", arguments: { n: 1 } });
    await until(() => seen.length === 1);
    await server.close();
    handler = async (call) => {
      seen.push(String(call.call_id));
      return { answered: "by the new host side" };
    };
    server = await startServer();
    const line = await droid.take((l) => l.op === "call" && l.id === "inflight", 15_000);
    await droid.take((l) => l.op === "done" && l.seq === seq);
    expect(line).toMatchObject({
      is_error: false,
      content: [{ type: "text", text: '{"answered":"by the new host side"}' }],
    });
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]).toBe(seen[0]);
  }, 20_000);

  it("an abrupt socket drop mid-call loses nothing: the client reconnects and re-sends", async () => {
    await server.close();
    // A host side that accepts hello and then dies in the middle of a call.
    let dropped: string | undefined;
    const sockets = new Set<Socket>();
    const fake: Server = createServer((socket) => {
      sockets.add(socket);
      const splitter = new LineSplitter(1024 * 1024);
      socket.on("error", () => {});
      socket.on("data", (chunk: Buffer) => {
        for (const e of splitter.push(chunk)) {
          if (e.kind !== "line") continue;
          const msg = JSON.parse(e.text) as { id: number; method: string; params: { call_id?: string } };
          if (msg.method === "hello") {
            socket.write(
              `${JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { session_id: "x", protocol_version: 2 } })}\n`,
            );
          } else if (msg.method === "caller_tool") {
            dropped = msg.params.call_id;
            socket.destroy();
          }
        }
      });
    });
    await new Promise<void>((resolve) => fake.listen(path, resolve));
    await until(() => sockets.size > 0);
    await new Promise((r) => setTimeout(r, 100));

    let resent: string | undefined;
    handler = async (call) => {
      resent = call.call_id;
      return { back: 1 };
    };
    const seq = droid.send({ op: "call", id: "survives", name: "ant_echo", arguments: {} });
    await until(() => dropped !== undefined);
    await new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      fake.close(() => resolve());
    });
    server = await startServer();
    const line = await droid.take((l) => l.op === "call" && l.id === "survives", 15_000);
    await droid.take((l) => l.op === "done" && l.seq === seq);
    expect(line).toMatchObject({ is_error: false, content: [{ type: "text", text: '{"back":1}' }] });
    expect(resent).toBe(dropped);
  }, 20_000);
});

describe("Oubliette's tools for a droid with an API key", () => {
  async function droidWithKey(apiKey: string): Promise<Droid> {
    const keyed = new Droid({
      OUBLIETTE_SOCKET: path,
      OUBLIETTE_SESSION_TOKEN: TOKEN,
      OUBLIETTE_API_KEY: apiKey,
      OUBLIETTE_CLIENT_COMMAND: JSON.stringify(["node", "--import", "tsx", "container-client/src/main.ts"]),
      OUBLIETTE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
    });
    await keyed.take((l) => l.op === "ready", 20_000);
    return keyed;
  }

  it("lists the key's tools as oubliette_<tool> beside the caller's, and calls them with the key", async () => {
    const keyed = await droidWithKey("good-key");
    try {
      const [waited] = await keyed.run({ op: "wait_tool", name: "oubliette_workspace", timeout_ms: 10_000 });
      expect(waited).toMatchObject({ found: true });
      const listed = (await keyed.run({ op: "list_tools" }))[0]?.tools as Array<{
        name: string;
        inputSchema: unknown;
      }>;
      expect(listed.map((t) => t.name)).toEqual(expect.arrayContaining(["ant_echo", "oubliette_workspace"]));
      expect(listed.find((t) => t.name === "oubliette_workspace")?.inputSchema).toMatchObject({
        properties: { action: { enum: ["list"] } },
      });
      const [called] = await keyed.run({
        op: "call",
        name: "oubliette_workspace",
        arguments: { action: "list" },
      });
      expect(called).toMatchObject({ is_error: false });
      expect(textOf(called as Line)).toBe('{"workspaces":["default"]}');
      expect(oublietteCalls.at(-1)).toEqual({
        method: "oubliette_call_tool",
        params: { api_key: "good-key", tool: "workspace", arguments: { action: "list" } },
      });
      const [refused] = await keyed.run({
        op: "call",
        name: "oubliette_workspace",
        arguments: { action: "delete" },
      });
      expect(refused).toMatchObject({ is_error: true });
      expect(textOf(refused as Line)).toContain("-32002");
      // Told the tools changed, it lists them again.
      moreOublietteTools = [{ name: "config_limits", inputSchema: { type: "object" } }];
      server.oublietteToolsChanged(SESSION_ID);
      const [again] = await keyed.run({
        op: "wait_tool",
        name: "oubliette_config_limits",
        timeout_ms: 10_000,
      });
      expect(again).toMatchObject({ found: true });
      moreOublietteTools = [];
    } finally {
      await keyed.stop();
    }
  });

  it("registers no Oubliette tool with a key the session object refuses", async () => {
    const keyed = await droidWithKey("bad-key");
    try {
      await until(() => oublietteCalls.some((c) => c.params.api_key === "bad-key"));
      const listed = (await keyed.run({ op: "list_tools" }))[0]?.tools as Array<{ name: string }>;
      expect(listed.map((t) => t.name).filter((n) => n.startsWith("oubliette_"))).toEqual([]);
      expect(listed.length).toBeGreaterThan(0);
    } finally {
      await keyed.stop();
    }
  });
});
