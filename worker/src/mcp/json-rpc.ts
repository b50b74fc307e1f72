import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** JSON-RPC error codes of MCP's Streamable HTTP layer. */
export const McpErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** The MCP session is unknown or terminated (the SDK uses -32001 for this too). */
  sessionNotFound: -32001,
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

/** Thrown by a method handler to answer with a JSON-RPC error. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

export type { JSONRPCMessage };
