import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import {
  type ApprovalDecision,
  type ApprovalRequest,
  allowanceCovers,
  approvalSubject,
  callApprovalId,
  evaluatePolicies,
} from "../../../protocol/approvals.js";
import type { JsonObject } from "../../../protocol/json.js";
import { project, requireAccess } from "../auth/access.js";
import { AppError } from "../errors.js";
import type { Log } from "../log.js";
import { PendingRequests } from "../pending/pending-requests.js";
import { PendingStore } from "../pending/pending-store.js";
import {
  type ApprovalOutcome,
  ApprovalOutcomeSchema,
  type ApprovalPayload,
  ApprovalPayloadSchema,
  type ApprovalResponseInput,
  type ApprovalRow,
  agentPart,
  askedByHost,
  type CallGate,
  type GatedCall,
  type OpenApproval,
  refusedAnswer,
  verdictOf,
} from "./approval-records.js";
import type { EventLog } from "./event-log.js";
import { seconds } from "./outcomes.js";
import { isLive, type SessionRecord } from "./session-record.js";

/** How long a decided approval is remembered (to refuse a second answer, and to answer a re-sent request). */
export const DONE_APPROVAL_RETENTION_MS = 10 * 60_000;
/** Most approval requests one session keeps waiting at once; more are denied at once. */
export const MAX_WAITING_APPROVALS = 32;

/** The pending-request kind of approvals. */
const KIND = "approval";

export interface ApprovalsDeps {
  sql: SqlStorage;
  record(): SessionRecord;
  save(): void;
  events: Pick<EventLog, "emit">;
  /** Sends a decision down the tunnel as the answer to its request (lost with no tunnel: the host asks again). */
  sendDecision(approvalId: string, decision: ApprovalDecision): void;
  /** Something is due (at `dueBy` when that is the only change; see AlarmSchedule). */
  scheduleAlarm(dueBy?: number): void;
  /** An approval began or ended: the session is not idle. */
  activity(now: number): void;
  /** A caller tool call's gate was decided by a person or the deadline: the call goes on, or is refused. */
  callDecided(call: GatedCall, decision: ApprovalDecision): void;
  /** An `allow_project` answer to a network request: the project's allowlist gets the host (audited). */
  allowForProject(host: string, port: number, principal: ApprovalResponseInput["principal"]): void;
  log: Log;
}

/**
 * Approval requests of one session, a kind of pending request (pending/pending-requests.ts). An
 * agent's question arrives from the tunnel (idempotent by approval id) and is decided by the
 * session's policies at once (allow, deny, or an earlier `allow_session`), or waits for a
 * person: an `approval_request` event with a deadline, then exactly one of an answer from a
 * writer of the project, the deadline (a deny), or the session's end (a deny). The decision goes
 * back down the tunnel; every decision is an event.
 */
export class Approvals {
  readonly #d: ApprovalsDeps;
  readonly #pending: PendingRequests<ApprovalOutcome>;
  /** Droid calls of Oubliette's tools waiting on their question, by approval id. */
  readonly #held = new Map<string, (decision: ApprovalDecision) => void>();

  constructor(deps: ApprovalsDeps) {
    this.#d = deps;
    this.#pending = new PendingRequests(
      new PendingStore(deps.sql, KIND, ApprovalOutcomeSchema),
      {
        // A call's gate was not asked by the host: its decision goes on as the call's outcome.
        deliver: (row, outcome) => {
          const held = this.#held.get(row.id);
          this.#held.delete(row.id);
          if (held) held(agentPart(outcome));
          else if (askedByHost(row)) deps.sendDecision(row.id, agentPart(outcome));
        },
        decided: (row, outcome, now) => this.#decided(row, outcome, now),
        scheduleAlarm: (dueBy) => deps.scheduleAlarm(dueBy),
      },
      DONE_APPROVAL_RETENTION_MS,
    );
  }

  /** An agent's question: its decision now (the policy, an allowance, a refusal), or null while a person decides. */
  onAsk(approvalId: string, agent: AgentRuntime, request: ApprovalRequest): ApprovalDecision | null {
    const known = this.#pending.find(approvalId);
    if (known) return known.outcome ? agentPart(known.outcome) : null;
    const immediate = this.#immediate(this.#d.record(), request);
    if ("decision" in immediate) return this.#decidedNow(approvalId, request, immediate);
    this.#openQuestion(approvalId, agent, request, immediate.ask);
    return null;
  }

  /** Puts a request to a person: an approval_request event, and a pending request until its deadline. */
  #openQuestion(
    id: string,
    agent: string,
    request: ApprovalRequest,
    match: string | null,
    holder: { call: GatedCall } | { held: true } | null = null,
  ): void {
    const now = Date.now();
    const deadline = now + (this.#d.record().approvals?.timeoutMs ?? 0);
    const payload: ApprovalPayload = { agent, request, match, ...(holder ?? {}) };
    this.#d.events.emit({
      type: "approval_request",
      request_id: id,
      agent,
      ...request,
      deadline: new Date(deadline).toISOString(),
    });
    this.#pending.open({ id, subject: request.kind, deadline, payload });
    this.#d.activity(now);
  }

  /**
   * The gate of a droid's caller tool call (`mcp_tool`, by the name the droid sees): the
   * policies' verdict, an allowance, or a question to a person that holds the call until it is
   * decided (re-sent calls find it). Allowed calls leave no trace here: the call is the record.
   */
  gateCall(call: GatedCall, toolName: string, agent: string): CallGate {
    // The relay's hot path: a session without policies (they never change) asks nothing.
    if (!this.#d.record().approvals?.policies.length) return { verdict: "allow" };
    const id = callApprovalId(call.id);
    const known = this.#pending.find(id);
    if (known?.state === "waiting") return { verdict: "waiting" };
    if (known?.outcome) return verdictOf(known.outcome);
    const request: ApprovalRequest = {
      kind: "mcp_tool",
      tool: toolName,
      arguments: call.arguments,
      summary: `Call ${toolName}`.slice(0, 200),
    };
    const immediate = this.#immediate(this.#d.record(), request);
    if (!("decision" in immediate)) {
      this.#openQuestion(id, agent, request, immediate.ask, { call });
      return { verdict: "waiting" };
    }
    // Allowed calls leave no trace here: the call is the record.
    if (immediate.decision === "allow") return { verdict: "allow" };
    return verdictOf(this.#decidedNow(id, request, immediate));
  }

  /**
   * The gate of a droid's call of one of Oubliette's tools (`mcp_tool`, `oubliette_<tool>`):
   * decided now, or held on a question to a person. The call waits in this object's memory (its
   * tunnel request is open meanwhile); should the object restart, the question still expires, and
   * the droid's call fails and may be made again, which asks again.
   */
  async gateTool(toolName: string, args: JsonObject, agent: string): Promise<ApprovalDecision> {
    if (!this.#d.record().approvals?.policies.length)
      return { decision: "allow", scope: "once", by: "policy" };
    const request: ApprovalRequest = {
      kind: "mcp_tool",
      tool: toolName,
      arguments: args,
      summary: `Call ${toolName}`,
    };
    const id = `apr_tool_${crypto.randomUUID().replaceAll("-", "")}`;
    const immediate = this.#immediate(this.#d.record(), request);
    if ("decision" in immediate) {
      return immediate.decision === "allow" ? agentPart(immediate) : this.#decidedNow(id, request, immediate);
    }
    const decided = new Promise<ApprovalDecision>((resolve) => this.#held.set(id, resolve));
    this.#openQuestion(id, agent, request, immediate.ask, { held: true });
    return decided;
  }

  /** A person's answer: a writer of the session's project, once, while the request waits. */
  respond(input: ApprovalResponseInput): { request_id: string; decision: "allow" | "deny"; scope: string } {
    const record = this.#d.record();
    requireAccess(
      input.principal,
      "write",
      project(record.projectId),
      `answer approval requests of session ${record.sessionId}`,
    );
    const row = this.#pending.find(input.requestId);
    if (!row) {
      throw new AppError(
        "unknown_request",
        `no approval request ${input.requestId} in session ${record.sessionId}`,
      );
    }
    if (row.state === "done") throw refusedAnswer(row);
    const payload = ApprovalPayloadSchema.safeParse(row.payload);
    const request = payload.success ? payload.data.request : null;
    if (input.answer === "allow_project" && request?.kind !== "network")
      throw new AppError(
        "invalid_arguments",
        "allow_project answers network requests only (it adds their host to the project's network allowlist)",
      );
    // The token, or the OAuth grant (grt_…), that answered.
    const by = input.principal.tokenId;
    const outcome: ApprovalOutcome =
      input.answer === "deny"
        ? {
            decision: "deny",
            scope: "once",
            by: "answer",
            answered_by: by,
            message: input.message ?? this.#denial(record),
          }
        : {
            decision: "allow",
            scope:
              input.answer === "allow_session"
                ? "session"
                : input.answer === "allow_project"
                  ? "project"
                  : "once",
            by: "answer",
            answered_by: by,
          };
    if (!this.#pending.settle(row, outcome, { deliver: true })) throw refusedAnswer(row);
    if (input.answer === "allow_session" || input.answer === "allow_project") this.#allowForSession(row);
    if (input.answer === "allow_project" && request?.host !== undefined && request.port !== undefined)
      this.#d.allowForProject(request.host, request.port, input.principal);
    return { request_id: row.id, decision: outcome.decision, scope: outcome.scope };
  }

  /** The agent no longer waits for `approvalId` (it ended, or its runner gave up): denied, not delivered. */
  cancel(approvalId: string, reason: string): void {
    const row = this.#pending.find(approvalId);
    if (row?.state !== "waiting") return;
    this.#pending.settle(
      row,
      { decision: "deny", scope: "once", by: "ended", message: reason },
      { deliver: false },
    );
  }

  /** Denies requests whose deadline has passed. */
  expire(now: number): void {
    const record = this.#d.record();
    const waited = seconds(record.approvals?.timeoutMs ?? 0);
    this.#pending.expire(now, () => ({
      decision: "deny",
      scope: "once",
      by: "timeout",
      message: `${this.#denial(record)} (nobody answered within ${waited})`,
    }));
  }

  /** Denies every waiting request (the session ended). */
  failAll(reason: string): void {
    this.#pending.failAll({ decision: "deny", scope: "once", by: "ended", message: reason });
  }

  prune(now: number): void {
    this.#pending.prune(now);
  }

  nextDue(): number | null {
    return this.#pending.nextDue();
  }

  countWaiting(): number {
    return this.#pending.countWaiting();
  }

  /** The waiting requests as callers see them, soonest deadline first. */
  open(limit: number): OpenApproval[] {
    return this.#pending.waiting(limit).flatMap((row) => {
      const payload = ApprovalPayloadSchema.safeParse(row.payload);
      if (!payload.success) return [];
      const { agent, request } = payload.data;
      return [
        {
          request_id: row.id,
          agent,
          kind: request.kind,
          summary: request.summary,
          request,
          deadline: new Date(row.deadline).toISOString(),
        },
      ];
    });
  }

  /** A decision made without asking anyone, or null when a person must decide. */
  #immediate(record: SessionRecord, request: ApprovalRequest): ApprovalOutcome | { ask: string | null } {
    if (!isLive(record.status)) {
      return {
        decision: "deny",
        scope: "once",
        by: "ended",
        message: `session ${record.sessionId} is ${record.status}`,
      };
    }
    const settings = record.approvals;
    const verdict = evaluatePolicies(settings?.policies ?? [], request);
    // The network policy alone opens hosts: a network request reaches here only when it did not,
    // and an approval policy that would let it pass unasked does not ask, so it stays refused.
    if (verdict.action === "allow" && request.kind === "network")
      return {
        decision: "deny",
        scope: "once",
        by: "policy",
        message: `${approvalSubject(request)} is not in the network policy, and the approval policy does not ask about it`,
      };
    if (verdict.action === "allow") return { decision: "allow", scope: "once", by: "policy" };
    if (verdict.action === "deny") {
      const rule = verdict.rule === null ? "the policy's default" : `rule ${verdict.rule + 1}`;
      return {
        decision: "deny",
        scope: "once",
        by: "policy",
        message: `${this.#denial(record)} (denied by ${rule})`,
      };
    }
    if (settings?.allowances.some((allowance) => allowanceCovers(allowance, request))) {
      return { decision: "allow", scope: "once", by: "session_allowance" };
    }
    if (this.#pending.countWaiting() >= MAX_WAITING_APPROVALS) {
      return {
        decision: "deny",
        scope: "once",
        by: "error",
        message: `${MAX_WAITING_APPROVALS} approval requests already wait for an answer in this session; ask again later`,
      };
    }
    // A person decides; `allow_session` will allow what this rule matched (a network request: its host).
    return { ask: request.kind === "network" ? approvalSubject(request) : verdict.match };
  }

  /** Records and announces a decision made the moment a request arrived; the decision the agent gets. */
  #decidedNow(id: string, request: ApprovalRequest, outcome: ApprovalOutcome): ApprovalDecision {
    this.#pending.decidedOnArrival({ id, subject: request.kind }, outcome, Date.now());
    this.#emitDecision(id, request, outcome);
    return agentPart(outcome);
  }

  #denial(record: SessionRecord): string {
    return record.approvals?.denialMessage ?? "denied";
  }

  #allowForSession(row: ApprovalRow): void {
    const payload = ApprovalPayloadSchema.safeParse(row.payload);
    const record = this.#d.record();
    if (!payload.success || !record.approvals) return;
    const allowance = { kind: payload.data.request.kind, match: payload.data.match };
    const known = record.approvals.allowances.some(
      (a) => a.kind === allowance.kind && a.match === allowance.match,
    );
    if (known) return;
    record.approvals.allowances.push(allowance);
    this.#d.save();
  }

  #decided(row: ApprovalRow, outcome: ApprovalOutcome, now: number): void {
    this.#d.activity(now);
    const payload = ApprovalPayloadSchema.safeParse(row.payload);
    if (!payload.success) return;
    this.#emitDecision(row.id, payload.data.request, outcome);
    // Not on a cancellation: the droid no longer waits for that call.
    const call = payload.data.call;
    if (call && outcome.by !== "ended") this.#d.callDecided(call, agentPart(outcome));
  }

  #emitDecision(id: string, request: ApprovalRequest, outcome: ApprovalOutcome): void {
    const common = { request_id: id, kind: request.kind, summary: request.summary };
    const answeredBy = outcome.answered_by !== undefined ? { answered_by: outcome.answered_by } : {};
    if (outcome.decision === "allow") {
      this.#d.events.emit({
        type: "approval_granted",
        ...common,
        scope: outcome.scope,
        by: outcome.by,
        ...answeredBy,
      });
    } else if (outcome.by === "timeout") {
      this.#d.events.emit({ type: "approval_expired", ...common, message: outcome.message ?? "" });
    } else {
      this.#d.events.emit({
        type: "approval_denied",
        ...common,
        by: outcome.by,
        message: outcome.message ?? "",
        ...answeredBy,
      });
    }
  }
}
