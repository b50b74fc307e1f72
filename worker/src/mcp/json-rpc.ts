import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { RpcErrorCode } from "../../../protocol/rpc/errors.js";

/**
 * JSON-RPC error codes of MCP's Streamable HTTP layer, from the one table in protocol/. An unknown
 * or terminated MCP session is an invalid request answered with HTTP 404 (-32001 is the API-key
 * error on the container path, and means only that).
 */
export const McpErrorCode = {
  parseError: RpcErrorCode.ParseError,
  invalidRequest: RpcErrorCode.InvalidRequest,
  methodNotFound: RpcErrorCode.MethodNotFound,
  invalidParams: RpcErrorCode.InvalidParams,
  internalError: RpcErrorCode.InternalError,
  sessionNotFound: RpcErrorCode.InvalidRequest,
  headerMismatch: RpcErrorCode.HeaderMismatch,
  missingClientCapability: RpcErrorCode.MissingRequiredClientCapability,
  unsupportedProtocolVersion: RpcErrorCode.UnsupportedProtocolVersion,
} as const;

export interface JsonRpcErrorBody {
  jsonrpc: "2.0";
  id: string | number | null;
  error: { code: number; message: string; data?: unknown };
}

/**
 * An HTTP answer as plain data: what an MCP session object returns over RPC (a Durable Object
 * RPC call costs far less than forwarding the HTTP request with `fetch`).
 */
export interface HttpReply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /**
   * The answer is an SSE stream held by the MCP session object: the Worker fetches it from there
   * (`/mcp/answers/<id>`). A fetched stream, unlike one returned over RPC, tells the object when
   * the client goes away.
   */
  streamId?: string;
}

/** A JSON body with its content type. */
export function jsonReply(value: unknown, headers: Record<string, string> = {}, status = 200): HttpReply {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(value) };
}

/** A JSON-RPC error object (id null) as an HTTP answer. */
export function rpcErrorReply(status: number, code: number, message: string): HttpReply {
  const body: JsonRpcErrorBody = { jsonrpc: "2.0", id: null, error: { code, message } };
  return jsonReply(body, {}, status);
}

export function toResponse(reply: HttpReply): Response {
  return new Response(reply.body ?? null, { status: reply.status, headers: reply.headers });
}

/** A JSON-RPC error object as an HTTP response. */
export function rpcErrorResponse(status: number, code: number, message: string): Response {
  return toResponse(rpcErrorReply(status, code, message));
}

export { clip, RpcError } from "../../../protocol/rpc/errors.js";

export type { JSONRPCMessage };
