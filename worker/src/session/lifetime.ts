import type { SessionRecord } from "./session-record.js";

/** What the lifetime rules need to know about the session besides its record. */
export interface LifetimeDeps {
  record(): SessionRecord;
  /** Caller tool calls the droid is waiting on. */
  countWaiting(): number;
}

/**
 * Turn-aware lifetime. A session is never stopped for idleness while something is in flight: a
 * turn (a message the droid has not finished) or a caller tool call. With nothing in flight it
 * stops after its idle timeout; whatever it is doing, it stops at its lifetime cap.
 */
export class Lifetime {
  readonly #d: LifetimeDeps;

  constructor(deps: LifetimeDeps) {
    this.#d = deps;
  }

  /** Something happened (a message, an event from the droid, a call): the idle clock restarts. */
  touch(now: number): void {
    this.#d.record().lastActivityAt = now;
  }

  /** Whether a turn or a caller tool call is in flight. */
  busy(): boolean {
    const record = this.#d.record();
    return record.lastMessageSeq > record.completedTurnSeq || this.#d.countWaiting() > 0;
  }

  /** Why the session must stop now, or null. */
  expired(now: number): string | null {
    const record = this.#d.record();
    const cap = this.#capAt(record);
    if (cap !== null && now >= cap) {
      return `the session reached its lifetime cap (max_lifetime_seconds ${Math.round(record.maxLifetimeMs / 1000)})`;
    }
    const idleAt = this.#idleAt(record);
    if (idleAt !== null && now >= idleAt && !this.busy()) {
      return `the session was idle for ${Math.round((now - (record.lastActivityAt ?? now)) / 1000)} s with no turn and no caller tool call in flight (idle_timeout_seconds ${Math.round(record.idleTimeoutMs / 1000)})`;
    }
    return null;
  }

  /** The next moment `expired` could say yes (for the alarm). */
  nextDue(): number | null {
    const record = this.#d.record();
    const due = [this.#capAt(record), this.busy() ? null : this.#idleAt(record)].filter(
      (t): t is number => t !== null,
    );
    return due.length ? Math.min(...due) : null;
  }

  #capAt(record: SessionRecord): number | null {
    return record.maxLifetimeMs > 0 ? Date.parse(record.createdAt) + record.maxLifetimeMs : null;
  }

  #idleAt(record: SessionRecord): number | null {
    return record.idleTimeoutMs > 0 && record.lastActivityAt !== null
      ? record.lastActivityAt + record.idleTimeoutMs
      : null;
  }
}
