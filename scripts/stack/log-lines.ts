/**
 * The lines a child process writes, kept so that callers can wait for one ("registered with the
 * Worker") whether it came before or after they asked.
 */

/** At most this many lines are kept (a long-running agent must not grow without bound). */
const MAX_LINES = 50_000;

interface Waiter {
  pattern: RegExp;
  resolve(line: string): void;
}

export class LogLines {
  readonly #lines: string[] = [];
  readonly #waiters = new Set<Waiter>();
  #partial = "";

  /** `name` and `logFile` are for the timeout message. */
  constructor(
    private readonly name: string,
    private readonly logFile: string,
  ) {}

  /** Takes a chunk of output; complete lines are matched against the waiters. */
  feed(chunk: Buffer | string): void {
    const parts = (this.#partial + chunk.toString()).split("\n");
    this.#partial = parts.pop() ?? "";
    for (const line of parts) {
      if (this.#lines.length < MAX_LINES) this.#lines.push(line);
      for (const waiter of this.#waiters) {
        if (waiter.pattern.test(line)) {
          this.#waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    }
  }

  /** Resolves with the first line matching `pattern`; rejects on timeout or abort. */
  waitFor(pattern: RegExp, timeoutMs = 30_000, signal?: AbortSignal): Promise<string> {
    const seen = this.#lines.find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#waiters.delete(waiter);
      };
      const waiter: Waiter = {
        pattern,
        resolve: (line) => {
          finish();
          resolve(line);
        },
      };
      const onAbort = () => {
        finish();
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new Error(
            `${this.name}: no log line matching ${pattern} within ${timeoutMs} ms; see ${this.logFile}`,
          ),
        );
      }, timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }
}
