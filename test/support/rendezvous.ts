/**
 * A meeting point for tests that run at once: each party arrives (or withdraws, when it cannot
 * get there), and `action` runs once — when every party still expected has arrived, or
 * `deadlineMs` after the first arrival, whichever comes first — and every arrival gets its
 * outcome. The agents' lifetime test kills the shared host-agent once, with each runtime's caller
 * request pending, instead of once per runtime.
 */
export class Rendezvous<T> {
  #expected: number;
  #arrived = 0;
  #timer: NodeJS.Timeout | undefined;
  #outcome: Promise<T> | undefined;
  readonly #waiting: { resolve: (value: Promise<T>) => void }[] = [];

  constructor(
    parties: number,
    private readonly deadlineMs: number,
    private readonly action: () => Promise<T>,
  ) {
    this.#expected = parties;
  }

  /** How many parties arrived before the action ran (all of them, unless the deadline came first). */
  get arrived(): number {
    return this.#arrived;
  }

  /** Arrives, and resolves with the action's outcome once it ran (rejects if it failed). */
  arrive(): Promise<T> {
    if (this.#outcome) return this.#outcome;
    this.#arrived += 1;
    const mine = new Promise<T>((resolve) => this.#waiting.push({ resolve }));
    if (this.#arrived === 1) this.#timer = setTimeout(() => this.#run(), this.deadlineMs);
    this.#check();
    return mine;
  }

  /** A party that will not arrive (its own step failed): the others need not wait for it. */
  withdraw(): void {
    if (this.#outcome) return;
    this.#expected -= 1;
    this.#check();
  }

  #check(): void {
    if (this.#arrived > 0 && this.#arrived >= this.#expected) this.#run();
  }

  #run(): void {
    if (this.#outcome) return;
    clearTimeout(this.#timer);
    this.#outcome = this.action();
    for (const waiting of this.#waiting.splice(0)) waiting.resolve(this.#outcome);
  }
}
