import type { CallerToolFailure, CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { JsonValue } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { AppError } from "../errors.js";

/** A failed caller tool call, as the droid will see it. */
export function failure(reason: CallerToolFailure, message: string): CallerToolOutcome {
  return { ok: false, error: { reason, message } };
}

const given = (value: unknown) => value !== undefined && value !== null;

/**
 * The caller's answer as an outcome. Exactly one of `result` and `error` must be given (null
 * counts as not given, as in the seed's `caller_tool_response(id, req, null, "not found")`), and
 * it must fit the answer budget.
 */
export function answerOutcome(result: JsonValue | undefined, error: unknown): CallerToolOutcome {
  if (given(result) && given(error)) {
    throw new AppError("invalid_arguments", "give either result or error, not both");
  }
  if (!given(result) && !given(error)) {
    throw new AppError("invalid_arguments", "give result (the tool's output) or error (why it failed)");
  }
  const tooLarge = checkSize("result", given(error) ? error : result);
  if (tooLarge) throw new AppError("too_large", tooLarge.message);
  if (given(error)) {
    const message =
      typeof error === "string"
        ? error
        : typeof error === "object" &&
            error !== null &&
            "message" in error &&
            typeof error.message === "string"
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
