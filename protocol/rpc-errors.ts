/** JSON-RPC 2.0 error codes used on the container socket and in MCP responses. */
export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** A generic Oubliette failure; `data.reason` says which. */
  ServerError: -32000,
  InvalidApiKey: -32001,
  ToolNotAllowed: -32002,
  /** The connection has not completed `hello`. */
  Unauthenticated: -32003,
} as const;
export type RpcErrorCode = (typeof RpcErrorCode)[keyof typeof RpcErrorCode];
