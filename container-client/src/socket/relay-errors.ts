/**
 * Why a request to the host-agent did not produce a result. Callers branch on `code` (and on
 * `rpcCode` for errors the host-agent sent), never on the message.
 */
export type RelayCallErrorCode =
  /** The host-agent answered with a JSON-RPC error; see `rpcCode` and `data`. */
  | "rpc_error"
  /** The connection dropped while the request was in flight. */
  | "connection_lost"
  /** No connection to the host-agent could be had in time. */
  | "not_connected"
  /** No answer before the client-side deadline. */
  | "timeout"
  /** The request would not fit on one socket line. */
  | "too_large"
  /** The droid cancelled the request. */
  | "cancelled"
  /** The client is shutting down. */
  | "closed";

export class RelayCallError extends Error {
  override readonly name = "RelayCallError";

  constructor(
    readonly code: RelayCallErrorCode,
    message: string,
    readonly rpcCode?: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The host-agent rejected the session token: retrying with the same token cannot help. */
export class AuthRejectedError extends Error {
  override readonly name = "AuthRejectedError";
  readonly permanent = true;
}
