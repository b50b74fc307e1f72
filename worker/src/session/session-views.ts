import type { CallerPrincipal } from "../auth/tokens.js";
import { AppError } from "../errors.js";
import type { Approvals } from "./approvals.js";
import type { CallerCalls } from "./caller-calls.js";
import type { EventLog } from "./event-log.js";
import type { EventWaiters } from "./event-waiters.js";
import type { Presence } from "./presence.js";
import type { SessionNetworkPart } from "./session-network.js";
import type { PendingRequests, SessionInfo } from "./session-record.js";
import type { SessionState } from "./session-state.js";
import type { EventsPage } from "./types.js";

/** The longest one `readEvents` call waits for an event (`session events` asks in slices of less). */
const MAX_EVENT_WAIT_MS = 50_000;
/** How often a reader waiting for events has its token checked again. */
const TOKEN_RECHECK_MS = 1_000;
/** Waiting calls listed by `session get` and `session pending` (the count says how many there are). */
const MAX_LISTED_REQUESTS = 100;

export interface SessionViewsDeps {
  state: SessionState;
  events: Pick<EventLog, "read" | "nextIndex">;
  calls: Pick<CallerCalls, "countWaiting" | "waiting">;
  approvals: Pick<Approvals, "countWaiting" | "open">;
  presence: Pick<Presence, "pollStarted" | "pollEnded">;
  network: Pick<SessionNetworkPart, "info">;
  waiters: EventWaiters;
  /** Whether a turn or a caller tool call is in flight. */
  busy(): boolean;
  /** Whether the principal's token still holds (checked while a read waits). */
  stillValid(principal: CallerPrincipal): Promise<boolean>;
}

/**
 * What callers see of a session: its info, its pending requests, and pages of its events, read
 * at once or waited for (a long poll). Access is checked by the caller of these methods.
 */
export class SessionViews {
  readonly #d: SessionViewsDeps;

  constructor(deps: SessionViewsDeps) {
    this.#d = deps;
  }

  info(): SessionInfo {
    const r = this.#d.state.require();
    return {
      session_id: r.sessionId,
      project_id: r.projectId,
      workspace_id: r.workspaceId,
      status: r.status,
      host_id: r.hostId,
      runtime: r.runtime,
      parent_session_id: r.parentId ?? null,
      depth: r.depth ?? 0,
      children: r.children ?? [],
      agent: r.agent?.runtime ?? "scripted",
      model: r.agent?.model ?? null,
      usage: r.usage ?? null,
      max_cost_usd: r.agent?.max_cost_usd ?? null,
      caller_id: r.callerId,
      caller_tools: r.callerTools.map((t) => t.name),
      caller_timeout_ms: r.callerTimeoutMs,
      caller_presence: r.callerPresence,
      ...this.#openRequests(),
      approval_policies: r.approvals?.policies ?? [],
      session_allowances: r.approvals?.allowances ?? [],
      network: this.#d.network.info(),
      busy: this.#d.busy(),
      idle_timeout_seconds: Math.round(r.idleTimeoutMs / 1000),
      max_lifetime_seconds: Math.round(r.maxLifetimeMs / 1000),
      next_index: this.#d.events.nextIndex,
      created_at: r.createdAt,
      ended_at: r.endedAt,
    };
  }

  /** The session's caller tool and approval requests that wait for an answer, soonest deadline first. */
  pending(): PendingRequests {
    const record = this.#d.state.require();
    return {
      session_id: record.sessionId,
      status: record.status,
      caller_id: record.callerId,
      caller_presence: record.callerPresence,
      ...this.#openRequests(),
    };
  }

  eventsPage(sinceIndex: number, limit: number): EventsPage {
    const events = this.#d.events.read(sinceIndex, limit);
    const last = events.at(-1);
    const next = last ? last.index + 1 : Math.min(sinceIndex, this.#d.events.nextIndex);
    return {
      events: events as Record<string, unknown>[],
      next_index: next,
      status: this.#d.state.require().status,
    };
  }

  /**
   * The events from `sinceIndex` on. With `waitMs`, a read that finds none waits (at most
   * MAX_EVENT_WAIT_MS) until one is appended or the time is up; while the owner waits, its caller
   * counts as present.
   */
  async waitForEvents(
    principal: CallerPrincipal,
    sinceIndex: number,
    limit: number,
    waitMs: number,
  ): Promise<EventsPage> {
    const { state } = this.#d;
    let page = this.eventsPage(sinceIndex, limit);
    if (page.events.length > 0 || waitMs <= 0 || !state.live) return page;
    const until = Date.now() + Math.min(waitMs, MAX_EVENT_WAIT_MS);
    const owner = principal.tokenId === state.require().ownerTokenId;
    if (owner) this.#d.presence.pollStarted();
    try {
      // The token is checked again every few seconds, and before a page found by waiting is
      // answered, as an open stream's is: a revoked token stops waiting, and gets nothing.
      while (page.events.length === 0 && state.live && Date.now() < until) {
        await this.#d.waiters.next(Math.min(until, Date.now() + TOKEN_RECHECK_MS));
        if (!(await this.#d.stillValid(principal))) {
          throw new AppError(
            "unauthorized",
            `token ${principal.tokenId} was revoked while it waited for events`,
          );
        }
        page = this.eventsPage(sinceIndex, limit);
      }
    } finally {
      if (owner) this.#d.presence.pollEnded();
    }
    return page;
  }

  /** The waiting calls as a caller sees them (the first MAX_LISTED_REQUESTS) and their count. */
  #openRequests(): Pick<
    SessionInfo,
    "pending_caller_requests" | "open_requests" | "pending_approvals" | "open_approvals"
  > {
    return {
      pending_approvals: this.#d.approvals.countWaiting(),
      open_approvals: this.#d.approvals.open(MAX_LISTED_REQUESTS),
      pending_caller_requests: this.#d.calls.countWaiting(),
      open_requests: this.#d.calls.waiting(MAX_LISTED_REQUESTS).map((call) => ({
        request_id: call.id,
        tool: call.subject,
        arguments: call.payload,
        deadline: new Date(call.deadline).toISOString(),
      })),
    };
  }
}
