/**
 * The host-agent, the container-client and the runner survive anything a peer can send: real
 * processes face a hostile Worker (a WebSocket server on loopback), a hostile host socket and a
 * hostile host-agent side, which send garbage, oversized and deeply nested messages, answers to
 * nothing, bad params and path-like ids. Nothing is killed; afterwards each process is still
 * running and still works.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import { LineSplitter } from "../../protocol/line-splitter.js";
import { buildAll, bundles } from "../../scripts/build.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN = "hostile-token";
const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;

/** Messages no peer should ever be able to crash us with. */
const garbage = [
  "",
  "not json",
  "{",
  "null",
  "42",
  "[]",
  deep,
  `{"jsonrpc":"2.0","id":1,"method":"x","params":${deep}}`,
  JSON.stringify({ jsonrpc: "2.0", id: { an: "object" }, method: "session_start" }),
  JSON.stringify({ jsonrpc: "2.0", id: 2, method: "no_such_method" }),
  JSON.stringify({ jsonrpc: "2.0", id: 3, result: "an answer to nothing" }),
  JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "an error to nothing" } }),
  JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "nothing" } }),
  JSON.stringify({
    jsonrpc: "2.0",
    method: "caller_tools_config",
    params: { caller_id: "ant", tools: "oops" },
  }),
  JSON.stringify({
    jsonrpc: "2.0",
    id: 4,
    method: "session_start",
    params: { session_id: "../../etc", spec: {} },
  }),
  JSON.stringify({ jsonrpc: "2.0", id: 5, method: "session_stop", params: { session_id: 5 } }),
  JSON.stringify({ jsonrpc: "2.0", id: 6, method: "agent_message", params: { seq: -1, text: 3 } }),
  JSON.stringify({ jsonrpc: "2.0", id: 7, method: "agent_stop", params: { grace_ms: "forever" } }),
  JSON.stringify({
    jsonrpc: "2.0",
    id: 8,
    method: "droid_message",
    params: { seq: 1, text: "x".repeat(300_000) },
  }),
  "\u0000\u0001\u0002",
  "x".repeat(2 * 1024 * 1024),
];

let dir: string;

beforeAll(async () => {
  await buildAll();
  dir = await mkdtemp(join(tmpdir(), "hostile-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

async function stop(child: ChildProcess): Promise<void> {
  if (!alive(child)) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("the host-agent, facing a hostile Worker", () => {
  let http: HttpServer;
  let wss: WebSocketServer;
  let agent: ChildProcess;
  const connections: string[] = [];
  const answers: Record<string, unknown>[] = [];

  beforeAll(async () => {
    http = createHttpServer();
    wss = new WebSocketServer({ server: http, maxPayload: 64 * 1024 * 1024 });
    wss.on("connection", (ws: WebSocket, request) => {
      connections.push(request.url ?? "");
      ws.on("message", (data) => {
        const text = data.toString();
        if (text === "ping") {
          ws.send("pong");
          return;
        }
        const message = JSON.parse(text) as { id?: unknown; method?: string };
        if (message.method === "host_hello")
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { host_id: "h" } }));
        else if (message.method === undefined) answers.push(message as Record<string, unknown>);
      });
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const port = (http.address() as { port: number }).port;
    agent = spawn(
      process.execPath,
      [
        bundles.hostAgent,
        "--worker-url",
        `http://127.0.0.1:${port}`,
        "--runtime",
        "process",
        "--socket-dir",
        join(dir, "sockets"),
        "--heartbeat-ms",
        "200",
        "--reconnect-max-ms",
        "300",
      ],
      {
        env: { PATH: process.env.PATH ?? "", OUBLIETTE_HOST_TOKEN: TOKEN, OUBLIETTE_LOG_LEVEL: "error" },
        stdio: "ignore",
      },
    );
  });

  afterAll(async () => {
    await stop(agent);
    wss.close();
    await new Promise((resolve) => http.close(resolve));
  });

  it("answers what it can, reconnects after what it cannot take, and never exits", async () => {
    await expect.poll(() => connections.length, { timeout: 15_000 }).toBeGreaterThan(0);
    for (let round = 0; round < 3; round++) {
      const [ws] = [...wss.clients];
      for (const message of garbage) ws?.send(message);
      await new Promise((r) => setTimeout(r, 500));
    }
    // The oversized frame made it drop the connection; it came back.
    await expect.poll(() => connections.length, { timeout: 15_000 }).toBeGreaterThan(1);
    expect(alive(agent)).toBe(true);
    // Bad requests got JSON-RPC errors, never a crash; the path-like session id was refused.
    const refused = answers.find((a) => a.id === 4) as { error?: { code: number } } | undefined;
    expect(refused?.error?.code).toBe(-32602);
    expect(answers.find((a) => a.id === 2)).toMatchObject({ error: { code: -32601 } });
  }, 60_000);
});

/** A socket server that says hello back to anything and then sends every garbage line. */
async function hostileHost(path: string, sockets: Set<Socket>): Promise<Server> {
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    const splitter = new LineSplitter(64 * 1024 * 1024);
    socket.on("data", (chunk: Buffer) => {
      for (const e of splitter.push(chunk)) {
        if (e.kind !== "line") continue;
        const message = JSON.parse(e.text) as { id?: unknown; method?: string };
        if (message.method !== "hello") continue;
        socket.write(
          `${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { session_id: "s", protocol_version: 2 } })}\n`,
        );
        for (const line of garbage) socket.write(`${line}\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}

describe("the container-client, facing a hostile host-agent", () => {
  it("keeps serving the droid", async () => {
    const path = join(dir, "client.sock");
    const sockets = new Set<Socket>();
    const server = await hostileHost(path, sockets);
    const client = new Client({ name: "droid", version: "0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bundles.containerClient],
      env: {
        PATH: process.env.PATH ?? "",
        OUBLIETTE_SOCKET: path,
        OUBLIETTE_SESSION_TOKEN: TOKEN,
        OUBLIETTE_LOG_LEVEL: "error",
      },
      stderr: "ignore",
    });
    try {
      await client.connect(transport);
      await expect.poll(() => sockets.size, { timeout: 10_000 }).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 1_000));
      // Still answering: the tool list (empty: no valid config came) and a call of an unknown tool.
      expect((await client.listTools()).tools).toEqual([]);
      const result = await client.callTool({ name: "ant_x", arguments: {} });
      expect(result.isError).toBe(true);
      expect(transport.pid).not.toBeNull();
    } finally {
      await client.close();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});

describe("the runner, facing a hostile host-agent", () => {
  it("keeps running its agent", async () => {
    const path = join(dir, "runner.sock");
    const sockets = new Set<Socket>();
    const server = await hostileHost(path, sockets);
    const runner = spawn(process.execPath, [bundles.containerClient, "runner"], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? "",
        OUBLIETTE_SOCKET: path,
        OUBLIETTE_RUNNER_TOKEN: TOKEN,
        OUBLIETTE_AGENT_COMMAND: JSON.stringify([process.execPath, "-e", "setInterval(() => {}, 1000)"]),
        OUBLIETTE_LOG_LEVEL: "error",
      },
      stdio: "ignore",
    });
    try {
      await expect.poll(() => sockets.size, { timeout: 10_000 }).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(alive(runner)).toBe(true);
    } finally {
      await stop(runner);
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});
