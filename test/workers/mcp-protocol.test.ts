import { describe, expect, it } from "vitest";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { initialize, initializeRequest, mcpFetch, rpc, rpcBody } from "./support/mcp.js";

describe("initialize", () => {
  it("returns an Mcp-Session-Id and the server's capabilities", async () => {
    const res = await mcpFetch({ body: initializeRequest("2025-11-25", "init-1") });
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/);
    const body = await rpcBody(res);
    expect(body.id).toBe("init-1");
    expect(body.result).toMatchObject({
      protocolVersion: "2025-11-25",
      capabilities: { tools: {}, logging: {} },
      serverInfo: { name: "oubliette-edge" },
    });
  });

  it("gives every initialize its own session", async () => {
    const [a, b] = await Promise.all([initialize(), initialize()]);
    expect(a).not.toBe(b);
  });

  it.each(["2025-11-25", "2025-06-18", "2025-03-26"])("echoes supported version %s", async (version) => {
    const body = await rpcBody(await mcpFetch({ body: initializeRequest(version) }));
    expect(body.result).toMatchObject({ protocolVersion: version });
  });

  it.each(["2024-11-05", "1999-01-01"])("answers unknown version %s with 2025-11-25", async (version) => {
    const body = await rpcBody(await mcpFetch({ body: initializeRequest(version) }));
    expect(body.result).toMatchObject({ protocolVersion: "2025-11-25" });
  });
});

describe("JSON-RPC framing", () => {
  it("answers malformed JSON with 400 and -32700", async () => {
    const session = await initialize();
    const res = await mcpFetch({ body: '{"jsonrpc": "2.0", "id": 1, "method": ', session });
    expect(res.status).toBe(400);
    expect((await rpcBody(res)).error?.code).toBe(McpErrorCode.parseError);
  });

  it("answers malformed JSON without a session with 400 and -32700", async () => {
    const res = await mcpFetch({ body: "{nope" });
    expect(res.status).toBe(400);
    expect((await rpcBody(res)).error?.code).toBe(McpErrorCode.parseError);
  });

  it.each([
    ["a JSON value that is not a message", { hello: "world" }],
    ["a request without jsonrpc", { id: 1, method: "ping" }],
    ["an empty batch", []],
  ])("answers %s with 400 and -32600", async (_, body) => {
    const session = await initialize();
    const res = await mcpFetch({ body, session });
    expect(res.status).toBe(400);
    expect((await rpcBody(res)).error?.code).toBe(McpErrorCode.invalidRequest);
  });

  it("refuses a body that is not declared as JSON with 415", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      session,
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(415);
  });

  it("answers an unknown method with -32601", async () => {
    const session = await initialize();
    const res = await rpc(session, "tools/frobnicate");
    expect(res.error?.code).toBe(McpErrorCode.methodNotFound);
    expect(res.error?.message).toContain("tools/frobnicate");
  });

  it("accepts notifications with 202 and no body", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: { jsonrpc: "2.0", method: "notifications/initialized" },
      session,
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  it("answers a batch with one response per request, in order", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: [
        { jsonrpc: "2.0", id: "a", method: "ping" },
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "x" } },
        { jsonrpc: "2.0", id: "b", method: "nope" },
      ],
      session,
    });
    expect(res.status).toBe(200);
    const body: unknown = await res.json();
    expect(body).toEqual([
      { jsonrpc: "2.0", id: "a", result: {} },
      { jsonrpc: "2.0", id: "b", error: expect.objectContaining({ code: McpErrorCode.methodNotFound }) },
    ]);
  });
});

describe("MCP-Protocol-Version header", () => {
  it("accepts a supported version", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      session,
      headers: { "mcp-protocol-version": "2025-06-18" },
    });
    expect(res.status).toBe(200);
  });

  it("refuses an unsupported version on POST with 400", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      session,
      headers: { "mcp-protocol-version": "2024-11-05" },
    });
    expect(res.status).toBe(400);
    expect((await rpcBody(res)).error?.code).toBe(McpErrorCode.invalidRequest);
  });

  it("takes a stateless-era version for a stateless request: without its envelope, 400 and -32602", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      session,
      headers: { "mcp-protocol-version": "2099-01-01" },
    });
    expect(res.status).toBe(400);
    expect(await rpcBody(res)).toMatchObject({ id: 1, error: { code: McpErrorCode.invalidParams } });
  });

  it("refuses an unsupported version on DELETE with 400 and keeps the session", async () => {
    const session = await initialize();
    const res = await mcpFetch({
      method: "DELETE",
      session,
      headers: { "mcp-protocol-version": "2099-01-01" },
    });
    expect(res.status).toBe(400);
    expect((await rpc(session, "ping")).result).toEqual({});
  });

  it("refuses an unsupported version on the GET stream with 400", async () => {
    const session = await initialize();
    const res = await mcpFetch({ method: "GET", session, headers: { "mcp-protocol-version": "2099-01-01" } });
    await res.body?.cancel();
    expect(res.status).toBe(400);
  });
});
