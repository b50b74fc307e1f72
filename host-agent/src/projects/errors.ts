import type { TunnelFailure } from "../../../protocol/tunnel.js";

/**
 * A request of the registry this host refuses or could not do, with the tunnel reason it answers
 * with (`data.reason`); the message says what to do about it.
 */
export class HostError extends Error {
  override readonly name = "HostError";

  constructor(
    readonly reason: TunnelFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
