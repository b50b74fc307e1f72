import type { CallerToolFailure, CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { JsonValue } from "../../../protocol/json.js";

/** A failed caller tool call, as the droid will see it. */
export function failure(reason: CallerToolFailure, message: string): CallerToolOutcome {
  return { ok: false, error: { reason, message } };
}

/** The caller's answer: `error` (a string or `{message}`) wins over `result`. */
export function answerOutcome(result: JsonValue | undefined, error: unknown): CallerToolOutcome {
  if (error !== undefined && error !== null) {
    const message =
      typeof error === "string"
        ? error
        : typeof error === "object" && "message" in error && typeof error.message === "string"
          ? error.message
          : JSON.stringify(error);
    return failure("caller_error", message);
  }
  return { ok: true, result: result ?? null };
}

/** Human form of a duration for error messages. */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
