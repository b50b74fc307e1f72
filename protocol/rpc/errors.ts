/**
 * The one table of JSON-RPC error codes, for the container socket, the tunnel and the MCP
 * endpoint alike. Each code means one thing everywhere.
 */
import { z } from "zod";

export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** An Oubliette failure with a reason: `data.reason` says which (see `FailureReasonSchema`). */
  ServerError: -32000,
  /** The API key given with a droid's call to Oubliette's own tools is invalid or expired. */
  InvalidApiKey: -32001,
  /** The API key's scope does not allow that tool. */
  ToolNotAllowed: -32002,
  /** The connection has not authenticated (`hello`) or presented a wrong secret. */
  Unauthenticated: -32003,
  /**
   * MCP 2026-07-28 (Streamable HTTP): a standard header (`MCP-Protocol-Version`, `Mcp-Method`,
   * `Mcp-Name`) or an `Mcp-Param-*` header is missing, malformed or does not match the body.
   */
  HeaderMismatch: -32020,
  /** MCP 2026-07-28: the request needs a client capability its `_meta` did not declare. */
  MissingRequiredClientCapability: -32021,
  /** MCP 2026-07-28: the request's protocol version is not one this server speaks. */
  UnsupportedProtocolVersion: -32022,
  /** The request was cancelled with `notifications/cancelled`. */
  RequestCancelled: -32800,
  /** Local only, never sent: the connection closed before the answer came. */
  ConnectionClosed: -32099,
} as const;
export type RpcErrorCode = (typeof RpcErrorCode)[keyof typeof RpcErrorCode];

export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

/** A JSON-RPC error as a throwable: handlers throw it, peers reject with it. Branch on `code`. */
export class RpcError extends Error {
  override readonly name = "RpcError";

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The wire form of this error. */
  toErrorObject(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }

  static from(error: JsonRpcErrorObject): RpcError {
    return new RpcError(error.code, error.message, error.data);
  }

  /** `data.reason` of a ServerError, when it has one. */
  get reason(): string | undefined {
    const data = this.data;
    if (typeof data !== "object" || data === null || !("reason" in data)) return undefined;
    return typeof data.reason === "string" ? data.reason : undefined;
  }
}

/** A short, single-line summary of zod issues for an error message (at most five). */
export function summarizeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 5).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
    return `${where}: ${issue.message}`;
  });
  const more = error.issues.length - shown.length;
  return more > 0 ? `${shown.join("; ")}; and ${more} more` : shown.join("; ");
}

/** Longest piece of untrusted input echoed in an error message, the ellipsis included. */
export const MAX_ECHO_CHARS = 64;

/**
 * Untrusted input as it may appear in an error message: at most MAX_ECHO_CHARS characters, cut
 * ones ending in "…". Echoing in full lets a 3 MB method name produce a 3 MB error.
 */
export function clip(text: string, max = MAX_ECHO_CHARS): string {
  if (text.length <= max) return text;
  let end = max - 1;
  // Never split a surrogate pair: half of one is not a character.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}
