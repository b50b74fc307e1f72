import { type CallerToolOutcome, CallerToolOutcomeSchema } from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { project, requireAccess } from "../auth/access.js";
import { AppError } from "../errors.js";
import type { Log } from "../log.js";
import { PendingRequests } from "../pending/pending-requests.js";
import { type PendingRow, PendingStore } from "../pending/pending-store.js";
import type { EventLog } from "./event-log.js";
import { answerOutcome, failure, seconds } from "./outcomes.js";
import { isLive, type SessionRecord } from "./session-record.js";
import type { RespondInput } from "./types.js";

/** How long a finished call is remembered (to refuse a second answer and to answer a re-sent call). */
export const DONE_CALL_RETENTION_MS = 10 * 60_000;

/** The pending-request kind of caller tool calls. */
const KIND = "caller_tool";

/** A caller tool call as stored: its id is the call id (the caller's `request_id`), `subject` the tool. */
export type CallRow = PendingRow<CallerToolOutcome>;

/** What the calls need from the rest of the session. */
export interface CallerCallsDeps {
  sql: SqlStorage;
  record(): SessionRecord;
  events: Pick<EventLog, "emit">;
  /** Sends a call's outcome down the tunnel (if it is down, the host asks again on reconnect). */
  sendOutcome(callId: string, outcome: CallerToolOutcome): void;
  /** Whether a call may wait for the caller's answer now (see Presence.mayWait). */
  callerMayWait(now: number): boolean;
  /** Something is due (at `dueBy` when that is the only change; see AlarmSchedule). */
  scheduleAlarm(dueBy?: number): void;
  /** A call began or ended: the session is not idle (its lifetime rules start counting again). */
  activity(now: number): void;
  log: Log;
}

/**
 * Caller tool calls of one session, a kind of pending request (pending/pending-requests.ts). The
 * session object is the one authority on each call's outcome: a droid's call arrives from the
 * tunnel (idempotent by call id), becomes a pending request with a deadline and a
 * `caller_tool_request` event, and ends exactly once: answered by the owner, timed out, cancelled
 * by the droid, or failed because the caller, the session or the host went away. The outcome
 * goes back down the tunnel.
 */
export class CallerCalls {
  readonly #d: CallerCallsDeps;
  readonly #pending: PendingRequests<CallerToolOutcome>;

  constructor(deps: CallerCallsDeps) {
    this.#d = deps;
    const store = new PendingStore(deps.sql, KIND, CallerToolOutcomeSchema);
    // Sessions stored before the shared mechanism kept their calls in a table of their own.
    store.adopt("calls", { id: "call_id", subject: "tool", payload: "arguments" });
    this.#pending = new PendingRequests(
      store,
      {
        deliver: (call, outcome) => deps.sendOutcome(call.id, outcome),
        decided: (call, outcome, now) => this.#decided(call, outcome, now),
        scheduleAlarm: (dueBy) => deps.scheduleAlarm(dueBy),
      },
      DONE_CALL_RETENTION_MS,
    );
  }

  /** A droid's call: its outcome now (known, refused), or null when the caller will decide it. */
  onCall(callId: string, tool: string, args: JsonObject): CallerToolOutcome | null {
    const known = this.#pending.find(callId);
    if (known) return known.state === "done" ? known.outcome : null;
    const record = this.#d.record();
    const now = Date.now();
    const refused = this.#refusal(record, tool, args, now);
    if (refused) {
      this.#pending.decidedOnArrival({ id: callId, subject: tool }, refused, now);
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
    this.#pending.open({ id: callId, subject: tool, deadline, payload: args });
    return null;
  }

  /** A call refused before it reached the caller (its approval was denied): remembered like any outcome. */
  refuse(callId: string, tool: string, outcome: CallerToolOutcome): CallerToolOutcome {
    const known = this.#pending.find(callId);
    if (known?.outcome) return known.outcome;
    this.#pending.decidedOnArrival({ id: callId, subject: tool }, outcome, Date.now());
    return outcome;
  }

  /** The droid no longer waits for `callId` (it cancelled, or went away). */
  cancel(callId: string, reason: string): void {
    const call = this.#pending.find(callId);
    if (call?.state !== "waiting") return;
    const message = `${reason}; nobody waits for an answer to request ${callId} any more`;
    this.#pending.settle(call, failure("cancelled", message), { deliver: false });
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
    const call = this.#pending.find(input.requestId);
    if (!call) {
      this.#d.log.warn("caller_tool_response for an unknown request_id", { request_id: input.requestId });
      throw new AppError(
        "unknown_request",
        `no caller tool request ${input.requestId} in session ${record.sessionId}`,
      );
    }
    if (call.state === "done") throw refusedAnswer(call);
    this.#pending.settle(call, answerOutcome(input.result, input.error), { deliver: true });
    return { request_id: input.requestId, status: "delivered" };
  }

  /** Fails calls whose deadline has passed. */
  expire(now: number): void {
    const timeout = seconds(this.#d.record().callerTimeoutMs);
    this.#pending.expire(now, (call) =>
      failure("timeout", `the caller did not answer ${call.subject} within ${timeout}`),
    );
  }

  /** Fails every waiting call with `outcome` (caller gone, session ended, host lost). */
  failAll(outcome: CallerToolOutcome): void {
    this.#pending.failAll(outcome);
  }

  /** Forgets finished calls past retention. */
  prune(now: number): void {
    this.#pending.prune(now);
  }

  /** The next moment something is due: a deadline, or pruning. */
  nextDue(): number | null {
    return this.#pending.nextDue();
  }

  /** How many calls wait for the caller's answer. */
  countWaiting(): number {
    return this.#pending.countWaiting();
  }

  /** The waiting calls, soonest deadline first (all, or the first `limit`). */
  waiting(limit = -1): CallRow[] {
    return this.#pending.waiting(limit);
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

  #decided(call: CallRow, outcome: CallerToolOutcome, now: number): void {
    this.#d.activity(now);
    if (!outcome.ok && outcome.error.reason !== "caller_error") {
      this.#d.events.emit({
        type: "caller_tool_failed",
        request_id: call.id,
        tool: call.subject,
        reason: outcome.error.reason,
        message: outcome.error.message,
      });
    }
  }
}

/** Why an answer to a finished call is refused, in the caller's terms. */
function refusedAnswer(call: CallRow): AppError {
  const outcome = call.outcome;
  if (!outcome || outcome.ok || outcome.error.reason === "caller_error") {
    return new AppError("already_answered", `request ${call.id} was already answered`);
  }
  if (outcome.error.reason === "cancelled") {
    return new AppError(
      "request_cancelled",
      `the droid no longer waits for request ${call.id}: ${outcome.error.message}`,
    );
  }
  return new AppError("request_expired", `request ${call.id} already failed: ${outcome.error.message}`);
}
