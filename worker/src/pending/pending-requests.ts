import type { PendingRow, PendingStore } from "./pending-store.js";

/** What a kind of pending request does when one is decided. */
export interface PendingHooks<O> {
  /**
   * Hands the outcome to whoever waits for it. Called before the row is updated, so delivery
   * does not wait for the storage commit: the receiver ignores outcomes of requests it no longer
   * has, so a crash in between can at worst deliver an ignored second outcome, never a second
   * result.
   */
  deliver(row: PendingRow<O>, outcome: O): void;
  /** A request was decided (answered, expired, cancelled, failed), after its row was updated. */
  decided(row: PendingRow<O>, outcome: O, now: number): void;
  /** Something new is due at `dueBy` (a deadline, pruning): the owner sets its alarm. */
  scheduleAlarm(dueBy: number): void;
}

/**
 * The one pending-request mechanism of an object: a request is opened with a deadline and
 * persisted, decided exactly once (answered, cancelled, expired or failed with the rest), its
 * outcome delivered, and remembered for `retentionMs` after, so a second answer is refused and a
 * re-sent request gets the same outcome. Everything lives in the object's SQLite, so it survives
 * restarts and hibernation; the owner's alarm drives `expire` and `prune` at `nextDue()`.
 * What a request means (who may answer, which events it makes) is the kind's, not this class's.
 */
export class PendingRequests<O> {
  readonly #store: PendingStore<O>;
  readonly #hooks: PendingHooks<O>;
  readonly #retentionMs: number;
  /** When the oldest finished request falls out of retention (pruning is due), or null. */
  #pruneAt: number | null;

  constructor(store: PendingStore<O>, hooks: PendingHooks<O>, retentionMs: number) {
    this.#store = store;
    this.#hooks = hooks;
    this.#retentionMs = retentionMs;
    const oldest = store.earliestDoneAt();
    this.#pruneAt = oldest === null ? null : oldest + retentionMs;
  }

  find(id: string): PendingRow<O> | null {
    return this.#store.find(id);
  }

  /** A new request that waits for its answer until `deadline`. */
  open(request: Pick<PendingRow<O>, "id" | "subject" | "deadline" | "payload">): void {
    this.#store.insertWaiting(request);
    this.#hooks.scheduleAlarm(request.deadline);
  }

  /** A request decided the moment it arrived (refused): remembered like any decided one. */
  decidedOnArrival(request: Pick<PendingRow<O>, "id" | "subject">, outcome: O, now: number): void {
    this.#store.insertDone(request, outcome, now);
    this.#finished(now);
  }

  /**
   * Decides a waiting request with `outcome` (delivered unless `deliver` is false: the one who
   * waited is gone). False when it was already decided.
   */
  settle(row: PendingRow<O>, outcome: O, options: { deliver: boolean }): boolean {
    if (row.state !== "waiting") return false;
    const now = Date.now();
    if (options.deliver) this.#hooks.deliver(row, outcome);
    if (!this.#store.complete(row.id, outcome, now)) return false;
    this.#hooks.decided(row, outcome, now);
    this.#finished(now);
    return true;
  }

  /** Decides every request whose deadline has passed with the outcome `expiry` gives it. */
  expire(now: number, expiry: (row: PendingRow<O>) => O): void {
    for (const row of this.#store.expired(now)) this.settle(row, expiry(row), { deliver: true });
  }

  /** Decides every waiting request with `outcome` (the one who answers, or the object, is gone). */
  failAll(outcome: O): void {
    for (const row of this.#store.waiting()) this.settle(row, outcome, { deliver: true });
  }

  /** Waiting requests, soonest deadline first (all, or the first `limit`). */
  waiting(limit = -1): PendingRow<O>[] {
    return this.#store.waiting(limit);
  }

  countWaiting(): number {
    return this.#store.countWaiting();
  }

  /** Forgets decided requests past retention. */
  prune(now: number): void {
    if (this.#pruneAt === null || this.#pruneAt > now) return;
    this.#store.pruneDone(now - this.#retentionMs);
    const oldest = this.#store.earliestDoneAt();
    this.#pruneAt = oldest === null ? null : oldest + this.#retentionMs;
  }

  /** The next moment something is due: a deadline, or pruning. */
  nextDue(): number | null {
    const deadline = this.#store.earliestDeadline();
    if (deadline === null) return this.#pruneAt;
    return this.#pruneAt === null ? deadline : Math.min(deadline, this.#pruneAt);
  }

  #finished(now: number): void {
    if (this.#pruneAt === null) this.#pruneAt = now + this.#retentionMs;
    this.#hooks.scheduleAlarm(this.#pruneAt);
  }
}
