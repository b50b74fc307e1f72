/**
 * Keeps one child process running: when it exits without being asked to, says so in one line
 * and starts a new one after a capped exponential backoff (1 s, 2 s, 4 s … 30 s). Consecutive
 * failures count only while each child dies young; a child that stayed up `stableMs` resets the
 * count and the backoff. After `maxFastFailures` in a row it gives up and says why.
 * No jitter: there is one child on one machine, no herd of clients to spread out.
 */
import { describeExit, type ExitInfo } from "./process-group.js";

/** What the supervisor needs of a running child. */
export interface Supervised {
  readonly exited: Promise<ExitInfo>;
  stop(): Promise<void>;
}

export interface SupervisorOptions<T extends Supervised> {
  /** Names the child in messages, e.g. "host-agent local-0123456789". */
  name: string;
  /** Where the child's output goes (named in every message). */
  logFile: string;
  /** The child, already started and ready. */
  first: T;
  /** Starts a replacement; resolves once it is ready, rejects if it cannot start or on abort. */
  restart(signal: AbortSignal): Promise<T>;
  /** One line per event (exit, restart). */
  report(line: string): void;
  /** Called once, with one line, when the supervisor gives up; the child is not running then. */
  onGiveUp(line: string): void;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** A child that ran this long was healthy: the failure count starts over. */
  stableMs?: number;
  maxFastFailures?: number;
}

export class Supervisor<T extends Supervised> {
  #current: T | undefined;
  #stopped = false;
  readonly #stopping = new AbortController();
  readonly #loop: Promise<void>;

  constructor(private readonly options: SupervisorOptions<T>) {
    this.#current = options.first;
    this.#loop = this.#watch();
  }

  /** The running child (undefined between a crash and its replacement). */
  get current(): T | undefined {
    return this.#current;
  }

  /** Stops supervising and stops the child; a pending restart is cancelled. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    await this.#current?.stop();
    await this.#loop;
  }

  async #watch(): Promise<void> {
    const o = this.options;
    const initialDelayMs = o.initialDelayMs ?? 1_000;
    const maxDelayMs = o.maxDelayMs ?? 30_000;
    const stableMs = o.stableMs ?? 60_000;
    const maxFastFailures = o.maxFastFailures ?? 10;
    let failures = 0;
    let startedAt = Date.now();
    let outcome = "";
    for (;;) {
      if (this.#current) {
        outcome = `exited (${describeExit(await this.#current.exited)})`;
        if (this.#stopped) return;
        // What the dead child started (a droid in its process group) must not outlive it.
        await this.#current.stop();
      }
      if (this.#stopped) return;
      this.#current = undefined;
      failures = Date.now() - startedAt >= stableMs ? 1 : failures + 1;
      if (failures >= maxFastFailures) {
        o.onGiveUp(
          `oubliette: ${o.name} ${outcome}; it failed ${failures} times in a row, giving up; see ${o.logFile}`,
        );
        return;
      }
      const delayMs = Math.min(maxDelayMs, initialDelayMs * 2 ** (failures - 1));
      o.report(`oubliette: ${o.name} ${outcome}; restarting in ${seconds(delayMs)}; see ${o.logFile}`);
      if (!(await this.#sleep(delayMs))) return;
      startedAt = Date.now();
      try {
        const child = await o.restart(this.#stopping.signal);
        if (this.#stopped) {
          await child.stop();
          return;
        }
        this.#current = child;
        o.report(`oubliette: ${o.name} restarted`);
      } catch (err) {
        if (this.#stopped) return;
        outcome = `could not start: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
  }

  /** Waits `ms`; false when stopped meanwhile. */
  #sleep(ms: number): Promise<boolean> {
    const signal = this.#stopping.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function seconds(ms: number): string {
  return ms >= 1_000 ? `${ms / 1_000} s` : `${ms} ms`;
}
