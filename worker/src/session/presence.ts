import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import { failure, seconds } from "./outcomes.js";
import type { SessionRecord } from "./session-record.js";
import type { SessionStore } from "./session-store.js";
import type { PresenceChange, Via } from "./types.js";

/** What presence needs from the rest of the session. */
export interface PresenceDeps {
  record(): SessionRecord;
  save(): void;
  store: SessionStore;
  graceMs: number;
  /** Whether the owner holds a live plain SSE/WebSocket subscription. */
  ownerSubscribed(): boolean;
  countWaiting(): number;
  failWaiting(outcome: CallerToolOutcome): void;
  scheduleAlarm(): void;
}

/**
 * Whether the session's caller is still there to answer. The caller is present while one of the
 * owner's MCP sessions exists with a live event stream (or has never opened one: a polling
 * client), while the owner waits in `session events` (`wait_seconds`), or while the owner holds
 * an SSE/WebSocket subscription. A dropped stream, and a poller's last wait, get a grace period
 * (to reconnect, to poll again); an ended MCP session counts as gone at once.
 *
 * What absence does depends on the session's `caller_presence`: with `stream` waiting caller tool
 * calls fail with `caller_disconnected` (and new ones are refused); with `deadline` they wait for
 * an answer until their deadline whoever is connected, for callers that come and go.
 */
export class Presence {
  readonly #d: PresenceDeps;
  /** The owner's `session events` calls waiting now (in memory: a wait lasts one RPC). */
  #pollers = 0;
  /** When the owner's last wait ended (epoch ms), for the grace period; null while waiting. */
  #pollerLeftAt: number | null = null;

  constructor(deps: PresenceDeps) {
    this.#d = deps;
  }

  /** Subscribes an owner's MCP session (idempotent). */
  attachMcp(via: Via): void {
    const existing = this.#d.store.subscriber(via.mcpSessionId);
    const state = via.streaming ? "live" : (existing?.state ?? "idle");
    if (existing?.state === state) return;
    this.#d.store.upsertSubscriber({ mcpSessionId: via.mcpSessionId, state, changedAt: Date.now() });
  }

  mcpChanged(mcpSessionId: string, change: PresenceChange): void {
    const store = this.#d.store;
    const now = Date.now();
    if (change === "gone") {
      store.removeSubscriber(mcpSessionId);
      this.check(now, "the caller ended its MCP session before answering");
      return;
    }
    if (!store.subscriber(mcpSessionId)) return;
    store.upsertSubscriber({ mcpSessionId, state: change, changedAt: now });
    if (change === "dropped") this.#d.scheduleAlarm();
  }

  /** The owner's last plain SSE/WebSocket subscriber went away. */
  plainClosed(): void {
    if (this.#d.ownerSubscribed()) return;
    this.#d.record().plainDroppedAt = Date.now();
    this.#d.save();
    this.check(Date.now());
    this.#d.scheduleAlarm();
  }

  plainOpened(): void {
    const record = this.#d.record();
    if (record.plainDroppedAt === null) return;
    record.plainDroppedAt = null;
    this.#d.save();
  }

  /** The owner began waiting in `session events`. */
  pollStarted(): void {
    this.#pollers += 1;
    this.#pollerLeftAt = null;
  }

  /** The owner's wait ended; once no wait is left the grace period runs. */
  pollEnded(): void {
    this.#pollers -= 1;
    if (this.#pollers > 0) return;
    this.#pollerLeftAt = Date.now();
    this.#d.scheduleAlarm();
  }

  isPresent(now: number): boolean {
    if (this.#d.ownerSubscribed() || this.#pollers > 0) return true;
    const grace = this.#d.graceMs;
    const plainDropped = this.#d.record().plainDroppedAt;
    if (plainDropped !== null && now < plainDropped + grace) return true;
    if (this.#pollerLeftAt !== null && now < this.#pollerLeftAt + grace) return true;
    return this.#d.store.subscribers().some((sub) => sub.state !== "dropped" || now < sub.changedAt + grace);
  }

  /** Whether a caller tool call may wait for an answer now (for `deadline` sessions, always). */
  mayWait(now: number): boolean {
    return this.#d.record().callerPresence === "deadline" || this.isPresent(now);
  }

  /** Fails every waiting call when its caller is no longer there to answer. */
  check(now: number, why?: string): void {
    if (this.#d.countWaiting() === 0 || this.mayWait(now)) return;
    const message = why ?? `the caller disconnected and did not reconnect within ${seconds(this.#d.graceMs)}`;
    this.#d.failWaiting(failure("caller_disconnected", message));
  }

  /** When a grace period ends next (for the alarm), or null. */
  nextDue(): number | null {
    const now = Date.now();
    const grace = this.#d.graceMs;
    const ends = this.#d.store
      .subscribers()
      .filter((sub) => sub.state === "dropped")
      .map((sub) => sub.changedAt + grace);
    const plain = this.#d.record().plainDroppedAt;
    if (plain !== null) ends.push(plain + grace);
    if (this.#pollerLeftAt !== null) ends.push(this.#pollerLeftAt + grace);
    const future = ends.filter((t) => t > now);
    return future.length ? Math.min(...future) : null;
  }
}
