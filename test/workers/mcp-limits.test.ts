/**
 * Size limits on /mcp: the body cap (413 with a JSON-RPC error naming it, whether the body
 * declares its length or is streamed) and bounded echoes of caller input in error messages.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_MCP_BODY_BYTES } from "../../worker/src/http/mcp-route.js";
import { BASE } from "./support/frame-socket.js";
import { initialize, mcpFetch, rpc, rpcBody } from "./support/mcp.js";
import { ADMIN_TOKEN } from "./support/tokens.js";

/** A JSON-RPC ping padded to `bytes` (ASCII, so characters are bytes). */
function paddedPing(bytes: number): string {
  const frame = (pad: string) => JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping", params: { pad } });
  return frame("x".repeat(bytes - frame("").length));
}

/** POSTs `text` as a stream of 64 KiB chunks, so no Content-Length is declared. */
function postStreamed(text: string, session?: string): Promise<Response> {
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 64 * 1024)
        controller.enqueue(bytes.slice(at, at + 64 * 1024));
      controller.close();
    },
  });
  return exports.default.fetch(`${BASE}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(session ? { "mcp-session-id": session } : {}),
    },
    body,
  });
}

describe("the /mcp body cap", () => {
  it("refuses a declared-length body over the cap with 413 and a JSON-RPC error naming it", async () => {
    const session = await initialize();
    const res = await mcpFetch({ body: paddedPing(MAX_MCP_BODY_BYTES + 1), session });
    expect(res.status).toBe(413);
    const body = await rpcBody(res);
    expect(body.error?.code).toBe(-32600);
    expect(body.error?.message).toContain(String(MAX_MCP_BODY_BYTES));
  });

  it("refuses a streamed body over the cap with 413", async () => {
    const session = await initialize();
    const res = await postStreamed(paddedPing(5 * 1024 * 1024), session);
    expect(res.status).toBe(413);
    expect((await rpcBody(res)).error?.message).toContain(String(MAX_MCP_BODY_BYTES));
    expect((await rpc(session, "ping")).result).toEqual({});
  });

  it("accepts a streamed body of exactly the cap", async () => {
    const session = await initialize();
    const res = await postStreamed(paddedPing(MAX_MCP_BODY_BYTES), session);
    expect(res.status).toBe(200);
    expect((await rpcBody(res)).result).toEqual({});
  });
});

/** Longest echo allowed: 64 characters of caller input, the ellipsis included. */
const ECHO = 64;

describe("echoes of caller input in errors", () => {
  it("cuts a huge unknown method name to 64 characters", async () => {
    const session = await initialize();
    const method = `m${"x".repeat(3_000_000)}`;
    const res = await rpc(session, method);
    expect(res.error?.code).toBe(-32601);
    const message = res.error?.message ?? "";
    expect(message.startsWith("Method not found: mxxx")).toBe(true);
    expect(message.endsWith("…")).toBe(true);
    expect(message.length).toBeLessThanOrEqual("Method not found: ".length + ECHO);
  });

  it("echoes a short unknown method name in full", async () => {
    const session = await initialize();
    const res = await rpc(session, "tools/destroy");
    expect(res.error).toMatchObject({ code: -32601, message: "Method not found: tools/destroy" });
  });

  it("cuts a huge unknown tool name to 64 characters", async () => {
    const session = await initialize();
    const res = await rpc(session, "tools/call", { name: "t".repeat(1_000_000) });
    expect(res.error?.code).toBe(-32602);
    const message = res.error?.message ?? "";
    expect(message).toMatch(/^Unknown tool: t+…$/);
    expect(message.length).toBeLessThanOrEqual("Unknown tool: ".length + ECHO);
  });

  it("does not split a character made of two UTF-16 units", async () => {
    const session = await initialize();
    const res = await rpc(session, `${"a".repeat(62)}🌍🌍🌍`);
    const echoed = (res.error?.message ?? "").slice("Method not found: ".length);
    expect(echoed).toBe(`${"a".repeat(62)}…`);
  });
});
