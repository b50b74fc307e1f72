/**
 * Bad input at every boundary (MCP endpoint, tunnel, container socket) gets a clear error,
 * nothing crashes, and another session's relay keeps working.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { runStep, spawnDroid, text } from "./support.js";

let stack: TestStack;
let caller: TestCaller;
let bystander: string;

beforeAll(async () => {
  stack = await TestStack.start();
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  caller.answerWith((r) => ({ result: `ok ${String(r.arguments.n)}` }));
  bystander = await spawnDroid(caller);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

/** POSTs raw text to /mcp in the caller's MCP session. */
async function post(body: string, headers: Record<string, string> = {}) {
  const res = await fetch(stack.mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${stack.adminToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": caller.transport.sessionId ?? "",
      ...headers,
    },
    body,
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
}

describe("MCP endpoint", () => {
  it("answers malformed JSON with 400 and a parse error", async () => {
    const res = await post("{not json");
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: -32700 } });
  });

  it("answers a body that is not JSON-RPC with 400 and invalid request", async () => {
    const res = await post(JSON.stringify({ hello: "world" }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: -32600 } });
  });

  it("answers an unknown method with -32601", async () => {
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/destroy" }));
    expect(res.body).toMatchObject({ id: 1, error: { code: -32601 } });
  });

  it("answers an unknown tool with -32602", async () => {
    const res = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "nope" } }),
    );
    expect(res.body).toMatchObject({ id: 2, error: { code: -32602, message: "Unknown tool: nope" } });
  });

  it("answers wrong tool arguments with an isError result naming the problem", async () => {
    const result = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "has space",
    });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/caller_id/);
    const missing = await caller.call("caller_tool_response", { request_id: "x" });
    expect(missing.isError).toBe(true);
    expect(JSON.stringify(missing.content)).toMatch(/session_id/);
  });

  it("refuses an oversized body with 413", async () => {
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method: "ping",
      params: { pad: "x".repeat(5 * 1024 * 1024) },
    });
    const res = await post(huge);
    expect(res.status).toBe(413);
  });

  it("refuses requests without a valid token", async () => {
    const res = await post("{}", { authorization: "Bearer oub_wrong" });
    expect(res.status).toBe(401);
  });
});

describe("tunnel", () => {
  it("answers bad frames with JSON-RPC errors and keeps the connection", async () => {
    const url = new URL("/v1/tunnel/host?host_id=intruder", stack.url.replace("http", "ws"));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${stack.hostToken}` } });
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (data) => {
      const raw = data.toString();
      if (raw !== "pong") frames.push(JSON.parse(raw) as Record<string, unknown>);
    });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send("not json");
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "launch_missiles" }));
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: { bad: "id" }, method: "host_hello" }));
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "host_hello", params: { v: 2 } }));
    ws.send(
      `{"jsonrpc":"2.0","id":3,"method":"host_hello","params":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
    );
    ws.send("x".repeat(1024 * 1024 + 10));
    ws.send("ping");
    await expect.poll(() => frames.length, { timeout: 5_000 }).toBe(6);
    expect(frames.map((f) => (f.error as { code: number }).code)).toEqual([
      -32700, -32003, -32600, -32602, -32600, -32600,
    ]);
    expect(frames[4]).toMatchObject({
      id: null,
      error: { message: expect.stringMatching(/nested deeper than 64/) },
    });
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it("refuses a tunnel without the host token", async () => {
    const url = new URL("/v1/tunnel/host?host_id=x", stack.url.replace("http", "ws"));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${stack.adminToken}` } });
    const status = await new Promise<number>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => resolve(101));
    });
    expect(status).toBe(401);
  });
});

describe("container socket (from inside the container)", () => {
  it("answers bad lines with JSON-RPC errors and keeps the connection", async () => {
    const sessionId = await spawnDroid(caller);
    const out = await runStep(caller, sessionId, {
      op: "socket",
      oversized_bytes: 2 * 1024 * 1024,
      lines: [
        "this is not json",
        { jsonrpc: "2.0", id: 1, method: "self_destruct" },
        { jsonrpc: "2.0", id: 2, method: "caller_tool", params: { tool: 5 } },
        { jsonrpc: "2.0", id: 3, method: "ping" },
      ],
      expect: 7,
    });
    const received = out.received as { id?: unknown; error?: { code: number } }[];
    const codes = received.filter((r) => r.error).map((r) => r.error?.code);
    expect(codes).toEqual(expect.arrayContaining([-32600, -32700, -32601, -32602]));
    expect(received).toContainEqual({ jsonrpc: "2.0", id: 3, result: {} });
    expect(out.open_after).toBe(true);
  });
});

it("leaves other sessions working after all of that", async () => {
  const out = await runStep(caller, bystander, {
    op: "call",
    name: "ant_send_response",
    arguments: { n: 42 },
  });
  expect(out.is_error).toBe(false);
  expect(text(out)).toBe("ok 42");
});
