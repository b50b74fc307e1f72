import { describe, expect, it } from "vitest";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { initialize, initializeRequest, mcpFetch, rpc, rpcBody } from "./support/mcp.js";
import { HOST_TOKEN, OTHER_TOKEN, UNKNOWN_TOKEN } from "./support/tokens.js";

/**
 * An unknown or ended MCP session: HTTP 404 with an invalid-request JSON-RPC error (-32001 is the
 * API-key error of the container path, and means only that).
 */
const SESSION_NOT_FOUND = RpcErrorCode.InvalidRequest;

const listTools = { jsonrpc: "2.0", id: 2, method: "tools/list" };

describe("/mcp authentication", () => {
  it.each([
    ["no Authorization header", null],
    ["an unknown token", UNKNOWN_TOKEN],
    ["a malformed token", "not-a-token"],
    ["the host-agent token", HOST_TOKEN],
  ])("answers 401 with WWW-Authenticate: Bearer for %s", async (_, token) => {
    const res = await mcpFetch({ body: initializeRequest(), token });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    expect(res.headers.get("mcp-session-id")).toBeNull();
  });

  it("answers 401 before looking at the session", async () => {
    const session = await initialize();
    const res = await mcpFetch({ body: listTools, session, token: UNKNOWN_TOKEN });
    expect(res.status).toBe(401);
  });
});

describe("/mcp sessions", () => {
  it("refuses a non-initialize POST without Mcp-Session-Id with 400", async () => {
    const res = await mcpFetch({ body: listTools });
    expect(res.status).toBe(400);
    expect((await rpcBody(res)).error?.code).toBe(McpErrorCode.invalidRequest);
    expect(res.headers.get("mcp-session-id")).toBeNull();
  });

  it("refuses a GET without Mcp-Session-Id with 400", async () => {
    const res = await mcpFetch({ method: "GET" });
    expect(res.status).toBe(400);
  });

  it.each([
    ["a well-formed id never issued", crypto.randomUUID()],
    ["a malformed id", "not-a-session"],
  ])("answers 404 for %s", async (_, session) => {
    const res = await mcpFetch({ body: listTools, session });
    expect(res.status).toBe(404);
    expect((await rpcBody(res)).error?.code).toBe(SESSION_NOT_FOUND);
  });

  it("answers 404 when another token uses the session, and the owner keeps it", async () => {
    const session = await initialize();
    const stolen = await mcpFetch({ body: listTools, session, token: OTHER_TOKEN });
    expect(stolen.status).toBe(404);
    const stolenStream = await mcpFetch({ method: "GET", session, token: OTHER_TOKEN });
    expect(stolenStream.status).toBe(404);
    const stolenDelete = await mcpFetch({ method: "DELETE", session, token: OTHER_TOKEN });
    expect(stolenDelete.status).toBe(404);
    expect((await rpc(session, "ping")).result).toEqual({});
  });

  it("refuses initialize on an existing session", async () => {
    const session = await initialize();
    const res = await mcpFetch({ body: initializeRequest(), session });
    expect(res.status).toBe(400);
  });

  it("ends the session on DELETE; every later request gets 404", async () => {
    const session = await initialize();
    const del = await mcpFetch({ method: "DELETE", session });
    expect(del.status).toBe(204);
    const post = await mcpFetch({ body: listTools, session });
    expect(post.status).toBe(404);
    expect((await rpcBody(post)).error?.code).toBe(SESSION_NOT_FOUND);
    expect((await mcpFetch({ method: "GET", session })).status).toBe(404);
    expect((await mcpFetch({ method: "DELETE", session })).status).toBe(404);
  });
});

describe("/mcp Origin validation", () => {
  it("refuses a browser Origin that is not allowed with 403", async () => {
    const res = await mcpFetch({ body: initializeRequest(), headers: { origin: "http://evil.example" } });
    expect(res.status).toBe(403);
    expect(res.headers.get("mcp-session-id")).toBeNull();
  });

  it("refuses a disallowed Origin even with a valid session", async () => {
    const session = await initialize();
    const res = await mcpFetch({ body: listTools, session, headers: { origin: "http://evil.example" } });
    expect(res.status).toBe(403);
  });

  it.each([
    ["the allowed origin", { origin: "http://allowed.example" }],
    ["the Worker's own origin", { origin: "https://worker.test" }],
    ["no Origin header", {}],
  ])("accepts %s", async (_, headers) => {
    const res = await mcpFetch({ body: initializeRequest(), headers });
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});
