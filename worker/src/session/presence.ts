import { failure, seconds } from "./outcomes.js";
import type { SessionDurableObject } from "./session-do.js";
import type { PresenceChange, Via } from "./types.js";

/**
 * Whether the session's caller is still there to answer. The caller is present while one of the
 * owner's MCP sessions exists with a live event stream (or has never opened one: a polling
 * client), or the owner holds an SSE/WebSocket subscription. A dropped stream gets a grace period
 * to reconnect (and resume with Last-Event-ID); an ended MCP session counts as gone at once.
 * When the caller is gone, waiting caller tool calls fail with `caller_disconnected`.
 */
export class Presence {
  readonly #s: SessionDurableObject;

  constructor(session: SessionDurableObject) {
    this.#s = session;
  }

  /** Subscribes an owner's MCP session (idempotent). */
  attachMcp(via: Via): void {
    const existing = this.#s.store.subscriber(via.mcpSessionId);
    const state = via.streaming ? "live" : (existing?.state ?? "idle");
    if (existing?.state === state) return;
    this.#s.store.upsertSubscriber({ mcpSessionId: via.mcpSessionId, state, changedAt: Date.now() });
  }

  mcpChanged(mcpSessionId: string, change: PresenceChange): void {
    const store = this.#s.store;
    const now = Date.now();
    if (change === "gone") {
      store.removeSubscriber(mcpSessionId);
      this.check(now, "the caller ended its MCP session before answering");
      return;
    }
    if (!store.subscriber(mcpSessionId)) return;
    store.upsertSubscriber({ mcpSessionId, state: change, changedAt: now });
    if (change === "dropped") this.#s.scheduleAlarm();
  }

  /** The owner's last plain SSE/WebSocket subscriber went away. */
  plainClosed(): void {
    if (this.#s.subscribers.ownerConnected()) return;
    this.#s.record.plainDroppedAt = Date.now();
    this.#s.save();
    this.check(Date.now());
    this.#s.scheduleAlarm();
  }

  plainOpened(): void {
    if (this.#s.record.plainDroppedAt === null) return;
    this.#s.record.plainDroppedAt = null;
    this.#s.save();
  }

  isPresent(now: number): boolean {
    if (this.#s.subscribers.ownerConnected()) return true;
    const grace = this.#s.config.callerGraceMs;
    const plainDropped = this.#s.record.plainDroppedAt;
    if (plainDropped !== null && now < plainDropped + grace) return true;
    return this.#s.store.subscribers().some((sub) => sub.state !== "dropped" || now < sub.changedAt + grace);
  }

  /** Fails every waiting call when the caller is no longer present. */
  check(now: number, why?: string): void {
    if (this.#s.store.countWaiting() === 0 || this.isPresent(now)) return;
    const grace = seconds(this.#s.config.callerGraceMs);
    const message = why ?? `the caller disconnected and did not reconnect within ${grace}`;
    this.#s.requests.failAll(failure("caller_disconnected", message));
  }

  /** When a grace period ends next (for the alarm), or null. */
  nextCheck(): number | null {
    const now = Date.now();
    const grace = this.#s.config.callerGraceMs;
    const ends = this.#s.store
      .subscribers()
      .filter((sub) => sub.state === "dropped")
      .map((sub) => sub.changedAt + grace);
    const plain = this.#s.record.plainDroppedAt;
    if (plain !== null) ends.push(plain + grace);
    const future = ends.filter((t) => t > now);
    return future.length ? Math.min(...future) : null;
  }
}
