import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { project, requireAccess } from "../auth/access.js";
import { AppError } from "../errors.js";
import type { Log } from "../log.js";
import type { EventLog } from "./event-log.js";
import { answerOutcome, failure, seconds } from "./outcomes.js";
import { isLive, type SessionRecord } from "./session-record.js";
import type { CallRow, SessionStore } from "./session-store.js";
import type { RespondInput } from "./types.js";

/** How long a finished call is remembered (to refuse a second answer and to answer a re-sent call). */
export const DONE_CALL_RETENTION_MS = 10 * 60_000;

/** What the calls need from the rest of the session. */
export interface CallerCallsDeps {
  record(): SessionRecord;
  store: SessionStore;
  events: Pick<EventLog, "emit">;
  /** Sends a call's outcome down the tunnel (if it is down, the host asks again on reconnect). */
  sendOutcome(callId: string, outcome: CallerToolOutcome): void;
  /** Whether a call may wait for the caller's answer now (see Presence.mayWait). */
  callerMayWait(now: number): boolean;
  scheduleAlarm(): void;
  /** A call began or ended: the session is not idle (its lifetime rules start counting again). */
  activity(now: number): void;
  log: Log;
}

/**
 * Caller tool calls of one session. The session object is the one authority on each call's
 * outcome: a droid's call arrives from the tunnel (idempotent by call id, which is also the
 * caller's `request_id`), becomes a pending request with a deadline and a `caller_tool_request`
 * event, and ends exactly once: answered by the owner, timed out, cancelled by the droid, or failed
 * because the caller, the session or the host went away. The outcome goes back down the tunnel.
 */
export class CallerCalls {
  readonly #d: CallerCallsDeps;
  /** When the oldest finished call falls out of retention (pruning is due), or null. */
  #pruneAt: number | null;

  constructor(deps: CallerCallsDeps) {
    this.#d = deps;
    const oldest = deps.store.earliestDoneAt();
    this.#pruneAt = oldest === null ? null : oldest + DONE_CALL_RETENTION_MS;
  }

  /** A droid's call: its outcome now (known, refused), or null when the caller will decide it. */
  onCall(callId: string, tool: string, args: JsonObject): CallerToolOutcome | null {
    const { store } = this.#d;
    const known = store.call(callId);
    if (known) return known.state === "done" ? known.outcome : null;
    const record = this.#d.record();
    const now = Date.now();
    const refused = this.#refusal(record, tool, args, now);
    if (refused) {
      store.insertDoneCall({ callId, tool }, refused, now);
      this.#finished(now);
      return refused;
    }
    const deadline = now + record.callerTimeoutMs;
    this.#d.events.emit({
      type: "caller_tool_request",
      request_id: callId,
      caller_id: record.callerId ?? "",
      tool,
      arguments: args,
      deadline: new Date(deadline).toISOString(),
    });
    store.insertCall({ callId, tool, deadline, arguments: args });
    this.#d.scheduleAlarm();
    return null;
  }

  /** The droid no longer waits for `callId` (it cancelled, or went away). */
  cancel(callId: string, reason: string): void {
    const call = this.#d.store.call(callId);
    if (call?.state !== "waiting") return;
    const message = `${reason}; nobody waits for an answer to request ${callId} any more`;
    this.#finish(call, failure("cancelled", message), { send: false });
  }

  /** A caller's answer: only the owner may answer, each request once, and only while the droid waits. */
  respond(input: RespondInput): { request_id: string; status: "delivered" } {
    const record = this.#d.record();
    requireAccess(
      input.principal,
      "write",
      project(record.projectId),
      `answer requests of session ${record.sessionId}`,
    );
    if (input.principal.tokenId !== record.ownerTokenId) {
      this.#d.log.warn("caller_tool_response from a token that does not own the session", {
        token: input.principal.tokenId,
        request_id: input.requestId,
      });
      throw new AppError(
        "not_owner",
        `only the caller that owns session ${record.sessionId} may answer its requests`,
      );
    }
    const call = this.#d.store.call(input.requestId);
    if (!call) {
      this.#d.log.warn("caller_tool_response for an unknown request_id", { request_id: input.requestId });
      throw new AppError(
        "unknown_request",
        `no caller tool request ${input.requestId} in session ${record.sessionId}`,
      );
    }
    if (call.state === "done") throw refusedAnswer(call);
    const outcome = answerOutcome(input.result, input.error);
    this.#finish(call, outcome, { send: true });
    return { request_id: input.requestId, status: "delivered" };
  }

  /** Fails calls whose deadline has passed. */
  expire(now: number): void {
    const timeout = seconds(this.#d.record().callerTimeoutMs);
    for (const call of this.#d.store.expiredCalls(now)) {
      this.#finish(call, failure("timeout", `the caller did not answer ${call.tool} within ${timeout}`), {
        send: true,
      });
    }
  }

  /** Fails every waiting call with `outcome` (caller gone, session ended, host lost). */
  failAll(outcome: CallerToolOutcome): void {
    for (const call of this.#d.store.waitingCalls()) this.#finish(call, outcome, { send: true });
  }

  /** Forgets finished calls past retention. */
  prune(now: number): void {
    if (this.#pruneAt === null || this.#pruneAt > now) return;
    this.#d.store.pruneDoneCalls(now - DONE_CALL_RETENTION_MS);
    const oldest = this.#d.store.earliestDoneAt();
    this.#pruneAt = oldest === null ? null : oldest + DONE_CALL_RETENTION_MS;
  }

  /** The next moment something is due: a deadline, or pruning. */
  nextDue(): number | null {
    const deadline = this.#d.store.earliestDeadline();
    if (deadline === null) return this.#pruneAt;
    return this.#pruneAt === null ? deadline : Math.min(deadline, this.#pruneAt);
  }

  #refusal(record: SessionRecord, tool: string, args: JsonObject, now: number): CallerToolOutcome | null {
    if (!isLive(record.status))
      return failure("session_ended", `session ${record.sessionId} is ${record.status}`);
    if (record.callerId === null)
      return failure("no_caller", "no caller has declared tools for this session");
    if (!record.callerTools.some((t) => t.name === tool)) {
      return failure("unknown_tool", `caller ${record.callerId} has no tool named ${tool}`);
    }
    const tooLarge = checkSize("arguments", args);
    if (tooLarge) return failure("too_large", tooLarge.message);
    if (!this.#d.callerMayWait(now)) {
      return failure(
        "caller_disconnected",
        `caller ${record.callerId} is not connected to session ${record.sessionId}`,
      );
    }
    return null;
  }

  /**
   * Decides a waiting call. The outcome goes to the host before the row is updated so it does not
   * wait for the storage commit; the host ignores outcomes for calls it no longer has, so a crash
   * in between can at worst produce an ignored second outcome, never a second result to the droid.
   */
  #finish(call: CallRow, outcome: CallerToolOutcome, options: { send: boolean }): void {
    if (call.state !== "waiting") return;
    const now = Date.now();
    if (options.send) this.#d.sendOutcome(call.callId, outcome);
    if (!this.#d.store.completeCall(call.callId, outcome, now)) return;
    this.#d.activity(now);
    if (!outcome.ok && outcome.error.reason !== "caller_error") {
      this.#d.events.emit({
        type: "caller_tool_failed",
        request_id: call.callId,
        tool: call.tool,
        reason: outcome.error.reason,
        message: outcome.error.message,
      });
    }
    this.#finished(now);
  }

  #finished(now: number): void {
    if (this.#pruneAt === null) this.#pruneAt = now + DONE_CALL_RETENTION_MS;
    // The idle clock restarted too.
    this.#d.scheduleAlarm();
  }
}

/** Why an answer to a finished call is refused, in the caller's terms. */
function refusedAnswer(call: CallRow): AppError {
  const outcome = call.outcome;
  if (!outcome || outcome.ok || outcome.error.reason === "caller_error") {
    return new AppError("already_answered", `request ${call.callId} was already answered`);
  }
  if (outcome.error.reason === "cancelled") {
    return new AppError(
      "request_cancelled",
      `the droid no longer waits for request ${call.callId}: ${outcome.error.message}`,
    );
  }
  return new AppError("request_expired", `request ${call.callId} already failed: ${outcome.error.message}`);
}
