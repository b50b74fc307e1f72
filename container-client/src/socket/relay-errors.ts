/**
 * Why a request to the host-agent did not produce a result. Callers branch on `code` (and on
 * `rpcCode` for errors the host-agent sent), never on the message.
 */
export type RelayCallErrorCode =
  /** The host-agent answered with a JSON-RPC error; see `rpcCode` and `data`. */
  | "rpc_error"
  /** The host-agent refused the session token: no call can be relayed. */
  | "not_connected"
  /** No answer by the backstop (the session's deadline plus the reconnect budget). */
  | "timeout"
  /** The arguments are over the size budget. */
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
