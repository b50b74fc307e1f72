import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import { type HostToSession, MAX_TUNNEL_FRAME_BYTES, type SessionToHost } from "../../../protocol/tunnel.js";
import { AppError } from "../errors.js";
import { exceedsUtf8Bytes } from "../frame-size.js";
import { answerOutcome, failure } from "./outcomes.js";
import type { SessionDurableObject } from "./session-do.js";
import { isLive } from "./session-record.js";
import type { CallRow } from "./session-store.js";
import type { RespondInput } from "./types.js";

type CallFrame = Extract<HostToSession, { type: "caller_tool_call" }>;

/**
 * Caller tool calls of one session: a droid's call arrives from the host tunnel, becomes a
 * pending request with a deadline and a `caller_tool_request` event; the owner answers it once
 * (or it times out, or the caller goes away) and the outcome goes back down the tunnel.
 * Calls are idempotent by the host's `call_id`, so a host that re-sends after a reconnect
 * neither duplicates a request nor loses an answer.
 */
export class SessionRequests {
  readonly #s: SessionDurableObject;

  constructor(session: SessionDurableObject) {
    this.#s = session;
  }

  onCall(frame: CallFrame): void {
    const s = this.#s;
    const known = s.store.callByCallId(frame.call_id);
    if (known) {
      // A re-sent call: answer it again if it is done, otherwise keep waiting.
      if (known.state === "done" && known.outcome) s.sendResult(known, known.outcome);
      return;
    }
    const record = s.record;
    const reject = (outcome: CallerToolOutcome) => s.sendResult({ callId: frame.call_id }, outcome);
    if (!isLive(record.status)) {
      reject(failure("session_ended", `session ${record.sessionId} is ${record.status}`));
      return;
    }
    if (record.callerId === null) {
      reject(failure("no_caller", "no caller has declared tools for this session"));
      return;
    }
    if (!record.callerTools.some((t) => t.name === frame.tool)) {
      reject(failure("unknown_tool", `caller ${record.callerId} has no tool named ${frame.tool}`));
      return;
    }
    const now = Date.now();
    if (!s.presence.isPresent(now)) {
      reject(
        failure(
          "caller_disconnected",
          `caller ${record.callerId} is not connected to session ${record.sessionId}`,
        ),
      );
      return;
    }
    const requestId = crypto.randomUUID();
    const deadline = now + record.callerTimeoutMs;
    s.emit({
      type: "caller_tool_request",
      request_id: requestId,
      caller_id: record.callerId,
      tool: frame.tool,
      arguments: frame.arguments,
      deadline: new Date(deadline).toISOString(),
    });
    s.store.insertCall({ requestId, callId: frame.call_id, tool: frame.tool, deadline });
    s.scheduleAlarm();
  }

  respond(input: RespondInput): { request_id: string; status: "delivered" } {
    const s = this.#s;
    const record = s.record;
    if (input.principal.tokenId !== record.ownerTokenId) {
      s.log.warn("caller_tool_response from a token that does not own the session", {
        token: input.principal.tokenId,
        request_id: input.requestId,
      });
      throw new AppError(
        "not_owner",
        `only the caller that owns session ${record.sessionId} may answer its requests`,
      );
    }
    s.attach(input.principal, input.via);
    const call = s.store.callByRequestId(input.requestId);
    if (!call) {
      s.log.warn("caller_tool_response for an unknown request_id", { request_id: input.requestId });
      throw new AppError(
        "unknown_request",
        `no caller tool request ${input.requestId} in session ${record.sessionId}`,
      );
    }
    if (call.state === "done") {
      const expired = call.outcome?.ok === false && call.outcome.error.reason !== "caller_error";
      s.log.warn("caller_tool_response for a finished request", { request_id: input.requestId, expired });
      if (expired && call.outcome?.ok === false) {
        throw new AppError(
          "request_expired",
          `request ${input.requestId} already failed: ${call.outcome.error.message}`,
        );
      }
      throw new AppError("already_answered", `request ${input.requestId} was already answered`);
    }
    const outcome = answerOutcome(input.result, input.error);
    // A frame over the tunnel cap would make the host-agent drop the tunnel, re-send the call
    // and get the same frame again; refuse it while the caller can still send something smaller.
    const frame = { type: "caller_tool_result", call_id: call.callId, outcome } satisfies SessionToHost;
    if (exceedsUtf8Bytes(JSON.stringify(frame), MAX_TUNNEL_FRAME_BYTES)) {
      throw new AppError(
        "invalid_arguments",
        `the answer to request ${input.requestId} is over the ${MAX_TUNNEL_FRAME_BYTES} bytes a droid can receive; send a smaller result or an error`,
      );
    }
    this.#complete(call, outcome);
    return { request_id: input.requestId, status: "delivered" };
  }

  /** Fails calls whose deadline has passed. */
  expire(now: number): void {
    const timeout = this.#s.describeTimeout();
    for (const call of this.#s.store.expiredCalls(now)) {
      const outcome = failure("timeout", `the caller did not answer ${call.tool} within ${timeout}`);
      this.#complete(call, outcome);
      this.#failedEvent(call, outcome);
    }
  }

  /** Fails every waiting call with `outcome` (caller gone, session ended). */
  failAll(outcome: CallerToolOutcome): void {
    for (const call of this.#s.store.waitingCalls()) {
      this.#complete(call, outcome);
      this.#failedEvent(call, outcome);
    }
  }

  /**
   * Finishes a waiting call. The result goes to the host before the row is updated so it does not
   * wait for the storage commit; the host ignores results for calls it no longer has, so a crash
   * in between can at worst produce an ignored second outcome, never a second result to the droid.
   */
  #complete(call: CallRow, outcome: CallerToolOutcome): void {
    const s = this.#s;
    if (call.state !== "waiting") return;
    s.sendResult(call, outcome);
    s.store.completeCall(call.requestId, outcome, Date.now());
    s.scheduleAlarm();
  }

  #failedEvent(call: CallRow, outcome: CallerToolOutcome): void {
    if (outcome.ok) return;
    this.#s.emit({
      type: "caller_tool_failed",
      request_id: call.requestId,
      tool: call.tool,
      reason: outcome.error.reason,
      message: outcome.error.message,
    });
  }
}
