import { AppError } from "../errors.js";

/** Readers of one session that may wait for its next event at the same time. */
export const MAX_EVENT_WAITERS = 16;

/**
 * Readers of `session events` that wait for the next event (`wait_seconds`). Each waits in
 * memory, with a timer, for the next event or its deadline, whichever comes first; there are at
 * most MAX_EVENT_WAITERS at a time, and none outlives its deadline, so a waiting reader holds the
 * object (and keeps it from hibernating) only for as long as one RPC lasts.
 */
export class EventWaiters {
  readonly #wake = new Set<() => void>();

  /** Resolves at the next event or at `until`; refuses a reader past the limit. */
  next(until: number): Promise<void> {
    if (this.#wake.size >= MAX_EVENT_WAITERS) {
      throw new AppError(
        "too_many_waiters",
        `${MAX_EVENT_WAITERS} readers already wait for this session's events; wait with fewer at a time`,
      );
    }
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#wake.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, until - Date.now()));
      this.#wake.add(wake);
    });
  }

  /** An event was appended: every waiting reader reads again. */
  wake(): void {
    for (const wake of [...this.#wake]) wake();
  }
}
