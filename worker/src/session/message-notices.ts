/**
 * A message for the droid is never lost without a word: one the host has not confirmed written to
 * the droid within the notice delay becomes a `message_undelivered` event (the host, its tunnel or
 * the container's runner is away), and once it does arrive a `message_delivered` event closes it.
 * The message itself stays queued and is re-sent whenever the host's tunnel is back.
 */
import type { NewEvent } from "./event-log.js";
import type { SessionStore } from "./session-store.js";

export interface MessageNoticesOptions {
  store: SessionStore;
  delayMs: number;
  emit(body: NewEvent): void;
}

export class MessageNotices {
  readonly #o: MessageNoticesOptions;

  constructor(options: MessageNoticesOptions) {
    this.#o = options;
  }

  /** When the next notice is due (null: every queued message was reported or there is none). */
  nextDue(): number | null {
    const oldest = this.#o.store.oldestUnnoticedMessage();
    return oldest === null ? null : oldest + this.#o.delayMs;
  }

  /** Reports every message overdue at `now`, once each. */
  check(now: number): void {
    for (const { seq, queuedAt } of this.#o.store.takeOverdueMessages(now - this.#o.delayMs)) {
      const waited = Math.round((now - queuedAt) / 1000);
      this.#o.emit({
        type: "message_undelivered",
        seq,
        waited_seconds: waited,
        message:
          `message ${seq} has not reached the droid after ${waited} s: its host has not confirmed it ` +
          "(the host, its tunnel or the container's runner is away); it is kept and sent again when they are back",
      });
    }
  }

  /** The host confirmed messages up to `seq`: those that were reported undelivered are reported delivered. */
  delivered(seq: number): void {
    for (const late of this.#o.store.ackMessages(seq)) this.#o.emit({ type: "message_delivered", seq: late });
  }
}
