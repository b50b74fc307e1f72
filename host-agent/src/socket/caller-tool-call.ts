/**
 * Runs one `caller_tool` request through the host-agent's handler with a backstop deadline and a
 * cancel path, turning every ending into either the caller's result or an `RpcError`.
 */
import type { JsonValue } from "../../../protocol/json.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import { callerToolError, RpcError } from "./rpc-error.js";
import type { CallerToolCall, RelayHandlers } from "./types.js";

/** Formats a duration the way droids read it in error messages ("60 s", "1.5 s"). */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () =>
      reject(
        signal.reason instanceof RpcError
          ? signal.reason
          : callerToolError("session_ended", "the caller tool call was cancelled"),
      );
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}

/**
 * Resolves with the caller's result or rejects with an `RpcError`. Aborting `controller` (with an
 * `RpcError` as reason) ends the call at once; so does the deadline, which also aborts it.
 */
export async function runCallerToolCall(
  handler: RelayHandlers["callerTool"],
  call: CallerToolCall,
  controller: AbortController,
  deadlineMs: number,
): Promise<JsonValue> {
  const timer = setTimeout(() => {
    controller.abort(callerToolError("timeout", `caller did not answer within ${formatSeconds(deadlineMs)}`));
  }, deadlineMs);
  try {
    const outcome = await Promise.race([handler(call, controller.signal), rejectOnAbort(controller.signal)]);
    if (outcome.ok) return outcome.result;
    throw callerToolError(outcome.error.reason, outcome.error.message);
  } catch (err) {
    if (err instanceof RpcError) throw err;
    throw new RpcError(
      RpcErrorCode.InternalError,
      "internal error while running the caller tool",
      undefined,
      {
        cause: err,
      },
    );
  } finally {
    clearTimeout(timer);
  }
}
