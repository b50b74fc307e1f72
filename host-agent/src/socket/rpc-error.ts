/**
 * JSON-RPC errors the relay socket answers with. Everything that goes wrong with a request is
 * an `RpcError` carrying its code; callers branch on the code, never on the message.
 */
import type { z } from "zod";
import type { CallerToolFailure } from "../../../protocol/caller-tools.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import type { JsonRpcErrorObject } from "../../../protocol/socket.js";

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
}

/** A failed caller tool call: code -32000 with `data.reason` (protocol `CallerToolErrorDataSchema`). */
export function callerToolError(reason: CallerToolFailure, message: string): RpcError {
  return new RpcError(RpcErrorCode.ServerError, message, { reason });
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
