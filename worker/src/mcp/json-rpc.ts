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

/** A JSON-RPC error object as an HTTP response. */
export function rpcErrorResponse(
  status: number,
  code: number,
  message: string,
  headers?: HeadersInit,
): Response {
  const body: JsonRpcErrorBody = { jsonrpc: "2.0", id: null, error: { code, message } };
  return Response.json(body, { status, headers });
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
