import { exports } from "cloudflare:workers";
import { z } from "zod";
import { BASE } from "./frame-socket.js";
import { SseReader } from "./sse.js";
import { ADMIN_TOKEN } from "./tokens.js";

export interface McpRequest {
  method?: "GET" | "POST" | "DELETE";
  /** An object is sent as JSON; a string is sent as is. */
  body?: unknown;
  /** null: no Authorization header. */
  token?: string | null;
  session?: string;
  headers?: Record<string, string>;
}

/** One HTTP request to `/mcp` through the Worker. */
export function mcpFetch(req: McpRequest = {}): Promise<Response> {
  const method = req.method ?? "POST";
  const headers: Record<string, string> = {
    accept: method === "GET" ? "text/event-stream" : "application/json, text/event-stream",
  };
  if (method === "POST") headers["content-type"] = "application/json";
  const token = req.token === undefined ? ADMIN_TOKEN : req.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (req.session !== undefined) headers["mcp-session-id"] = req.session;
  Object.assign(headers, req.headers);
  const body =
    req.body === undefined ? undefined : typeof req.body === "string" ? req.body : JSON.stringify(req.body);
  return exports.default.fetch(`${BASE}/mcp`, { method, headers, body });
}

const RpcErrorSchema = z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() });
/** A JSON-RPC response (success or error) as the endpoint sends it. */
export const RpcResponseSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.unknown().optional(),
  error: RpcErrorSchema.optional(),
});
export type RpcResponse = z.infer<typeof RpcResponseSchema>;

/**
 * Reads a JSON-RPC response body (JSON, or the response event of an SSE answer, which a call
 * that waits gets), failing the test when it is not one.
 */
export async function rpcBody(res: Response): Promise<RpcResponse> {
  if (!res.headers.get("content-type")?.startsWith("text/event-stream"))
    return RpcResponseSchema.parse(await res.json());
  const stream = new SseReader(res.body);
  const isResponse = (value: unknown) => RpcResponseSchema.safeParse(value).success;
  const { value } = await stream.nextJson(isResponse, 60_000);
  await stream.cancel();
  return RpcResponseSchema.parse(value);
}

export function initializeRequest(protocolVersion = "2025-11-25", id: number | string = 1) {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "workers-test", version: "1" } },
  };
}

/** Starts an MCP session; returns its id. */
export async function initialize(token = ADMIN_TOKEN, protocolVersion = "2025-11-25"): Promise<string> {
  const res = await mcpFetch({ body: initializeRequest(protocolVersion), token });
  const id = res.headers.get("mcp-session-id");
  if (res.status !== 200 || !id) throw new Error(`initialize failed: ${res.status} ${await res.text()}`);
  await mcpFetch({ body: { jsonrpc: "2.0", method: "notifications/initialized" }, token, session: id });
  return id;
}

let nextId = 100;

/** One JSON-RPC request on an MCP session. */
export async function rpc(
  session: string,
  method: string,
  params?: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<RpcResponse> {
  nextId += 1;
  const res = await mcpFetch({
    body: { jsonrpc: "2.0", id: nextId, method, ...(params ? { params } : {}) },
    session,
    token,
    headers: { "mcp-protocol-version": "2025-11-25" },
  });
  if (res.status !== 200) throw new Error(`${method} answered HTTP ${res.status}: ${await res.text()}`);
  return rpcBody(res);
}

/**
 * A `tools/call` whose answer is read as it streams (a call that waits answers over SSE);
 * `meta` goes in `params._meta` (a progressToken, say). Cancel the reader to leave.
 */
export async function streamedCall(
  session: string,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
) {
  nextId += 1;
  const id = nextId;
  const res = await mcpFetch({
    session,
    headers: { "mcp-protocol-version": "2025-11-25" },
    body: {
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
    },
  });
  return { id, res, stream: new SseReader(res.body) };
}

export const ToolResultSchema = z.object({
  content: z.array(z.object({ type: z.literal("text"), text: z.string() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
});
export type ToolResult = z.infer<typeof ToolResultSchema>;

/** `tools/call`; fails the test on a JSON-RPC error (tool failures are results with isError). */
export async function callTool(
  session: string,
  name: string,
  args: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<ToolResult> {
  const res = await rpc(session, "tools/call", { name, arguments: args }, token);
  if (res.error) throw new Error(`tools/call ${name}: JSON-RPC error ${res.error.code} ${res.error.message}`);
  return ToolResultSchema.parse(res.result);
}
