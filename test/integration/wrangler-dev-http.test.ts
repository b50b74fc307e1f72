/**
 * The HTTP edge under the Worker's real local server, workerd (no host-agent): request bodies the
 * Worker refuses must not wedge the server, or break the client's connection, for the requests
 * after them, and the Host rule must hold for the Host header a browser sends when a rebinding
 * DNS name points at the Worker.
 */
import { Agent, request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalStack } from "../../scripts/stack/local-stack.js";

let stack: LocalStack;

beforeAll(async () => {
  stack = await LocalStack.start();
});

afterAll(async () => {
  await stack?.stop();
});

const LIMIT = 4 * 1024 * 1024;
/** Long enough for a healthy dev server; a wedged one hangs, which fails the test instead. */
const ANSWER_MS = 15_000;

function initializeBody(): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "limit-test", version: "1" },
    },
  });
}

/** 5 MiB of JSON-RPC: as one string (sent with Content-Length) or as a chunked stream. */
function hugeBody(chunked: boolean): string | ReadableStream<Uint8Array> {
  const text = JSON.stringify({
    jsonrpc: "2.0",
    id: 3,
    method: "ping",
    params: { pad: "x".repeat(5 << 20) },
  });
  if (!chunked) return text;
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 64 * 1024)
        controller.enqueue(bytes.slice(at, at + 64 * 1024));
      controller.close();
    },
  });
}

function postMcp(body: string | ReadableStream<Uint8Array>, token: string | null): Promise<Response> {
  // `duplex` is required by Node's fetch for a streamed body and missing from the DOM typings.
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    duplex: "half",
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body,
    signal: AbortSignal.timeout(ANSWER_MS),
  };
  return fetch(stack.mcpUrl, init);
}

/** A fresh MCP session, then its GET event stream: both must answer at once. */
async function expectServing(): Promise<void> {
  const init = await postMcp(initializeBody(), stack.adminToken);
  expect(init.status).toBe(200);
  await init.text();
  const session = init.headers.get("mcp-session-id");
  expect(session).toMatch(/^[0-9a-f-]{36}$/);
  const stream = await fetch(stack.mcpUrl, {
    headers: {
      authorization: `Bearer ${stack.adminToken}`,
      accept: "text/event-stream",
      "mcp-session-id": session ?? "",
      "mcp-protocol-version": "2025-11-25",
    },
    signal: AbortSignal.timeout(ANSWER_MS),
  });
  expect(stream.status).toBe(200);
  expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
  await stream.body?.cancel();
}

describe("a refused request body", () => {
  it.each([
    ["with Content-Length", false],
    ["chunked", true],
  ])("over the limit (%s) gets 413 and the next requests are served", async (_, chunked) => {
    const res = await postMcp(hugeBody(chunked), stack.adminToken);
    expect(res.status).toBe(413);
    const body = (await res.json()) as { error?: { code?: number; message?: string } };
    expect(body.error?.code).toBe(-32600);
    expect(body.error?.message).toContain(String(LIMIT));
    await expectServing();
  });

  it("refused before authentication (401) leaves the next requests served", async () => {
    const res = await postMcp(hugeBody(true), null);
    expect(res.status).toBe(401);
    await res.text();
    await expectServing();
  });
});

/** One request on `agent`: its status and whether it went on a connection an earlier one used. */
function onAgent(
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; reused: boolean }> {
  const url = new URL(stack.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { agent, host: url.hostname, port: url.port, path, method, headers, timeout: ANSWER_MS },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("no answer")));
    req.end(body);
  });
}

describe("a connection after a refused request", () => {
  it.each([
    ["401, no token", "/mcp", {}, 401],
    ["403, a foreign Host", "/mcp", { host: "evil.example.com" }, 403],
    ["404, no such route", "/v1/nothing-here", {}, 404],
  ])("carries the next request (%s)", async (_, path, extra: Record<string, string>, status) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const headers = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...extra,
      };
      const refused = await onAgent(agent, "POST", path, headers, initializeBody());
      expect(refused.status).toBe(status);
      // Its body was never looked at; the next request goes on the same connection and is served.
      const next = await onAgent(agent, "GET", "/healthz", {});
      expect(next).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  });
});

/** A request with the Host header a browser sends to a rebound name (fetch cannot set Host). */
function withHost(host: string, origin: string): Promise<number> {
  const url = new URL(stack.mcpUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: "/mcp",
        method: "POST",
        headers: {
          host,
          origin,
          authorization: `Bearer ${stack.adminToken}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        timeout: ANSWER_MS,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("no answer")));
    req.end(initializeBody());
  });
}

describe("DNS rebinding", () => {
  it("refuses a foreign Host with 403, even when Origin matches it", async () => {
    const port = new URL(stack.url).port;
    expect(await withHost(`evil.example.com:${port}`, `http://evil.example.com:${port}`)).toBe(403);
  });

  it("serves a loopback Host and Origin", async () => {
    const port = new URL(stack.url).port;
    expect(await withHost(`localhost:${port}`, `http://localhost:${port}`)).toBe(200);
  });
});
