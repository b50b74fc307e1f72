/**
 * Everything that keeps running in the background — timers and event streams — belongs to a
 * Scope. A view gets a child scope that the router disposes on navigation; the root scope is
 * disposed when the sign-in ends, which stops every timer and closes every EventSource at once.
 */

/** Time, injected so the behaviour can be driven without waiting (STYLE 14). */
export interface Clock {
  setTimeout(fn: () => void, ms: number): number;
  clearTimeout(handle: number): void;
  now(): number;
  random(): number;
}

export const browserClock: Clock = {
  setTimeout: (fn, ms) => window.setTimeout(fn, ms),
  clearTimeout: (handle) => window.clearTimeout(handle),
  now: () => Date.now(),
  random: () => Math.random(),
};

/** Reopening a closed stream: capped exponential backoff with full jitter, reset after a stable period. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 30_000;
const STABLE_MS = 30_000;

export type StreamState = "open" | "reconnecting" | "closed";

export class Scope {
  readonly #clock: Clock;
  readonly #disposers = new Set<() => void>();
  #disposed = false;

  constructor(clock: Clock = browserClock) {
    this.#clock = clock;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Runs `dispose` when this scope ends (at once if it already has). */
  add(dispose: () => void): () => void {
    if (this.#disposed) {
      dispose();
      return () => {};
    }
    this.#disposers.add(dispose);
    return () => this.#disposers.delete(dispose);
  }

  /** A scope that ends with this one, or earlier on its own. */
  child(): Scope {
    const child = new Scope(this.#clock);
    const remove = this.add(() => child.dispose());
    child.add(remove);
    return child;
  }

  /** A one-shot timer, cancelled with the scope. */
  after(ms: number, fn: () => void): void {
    if (this.#disposed) return;
    const handle = this.#clock.setTimeout(() => {
      remove();
      fn();
    }, ms);
    const remove = this.add(() => this.#clock.clearTimeout(handle));
  }

  /**
   * Runs `task` now and then `ms` after each run ends: a slow answer never overlaps the next
   * run. `poke` runs it again soon (coalesced with a run in flight).
   */
  every(ms: number, task: () => Promise<void> | void): { poke(): void } {
    let running = false;
    let again = false;
    let handle: number | null = null;
    const schedule = (delay: number) => {
      if (this.#disposed) return;
      if (handle !== null) this.#clock.clearTimeout(handle);
      handle = this.#clock.setTimeout(run, delay);
    };
    const run = () => {
      handle = null;
      if (this.#disposed) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      Promise.resolve()
        .then(task)
        .catch(() => {})
        .finally(() => {
          running = false;
          schedule(again ? 0 : ms);
          again = false;
        });
    };
    this.add(() => {
      if (handle !== null) this.#clock.clearTimeout(handle);
    });
    run();
    return {
      poke: () => {
        if (running) again = true;
        else schedule(0);
      },
    };
  }

  /**
   * Follows a Server-Sent Events URL. EventSource resumes by itself (with Last-Event-ID) after a
   * dropped connection; when the server answers an error it gives up (CLOSED), and a new one is
   * opened after a backoff — that one starts from the beginning, so callers must skip repeats.
   */
  stream(url: string, onData: (data: string) => void, onState: (state: StreamState) => void): void {
    let source: EventSource | null = null;
    let attempt = 0;
    let openedAt = 0;
    const open = () => {
      if (this.#disposed) return;
      source = new EventSource(url);
      source.addEventListener("open", () => {
        openedAt = this.#clock.now();
        onState("open");
      });
      source.addEventListener("message", (event) => {
        if (typeof event.data === "string") onData(event.data);
      });
      source.addEventListener("error", () => {
        if (!source || source.readyState !== EventSource.CLOSED) {
          onState("reconnecting");
          return;
        }
        source = null;
        if (openedAt && this.#clock.now() - openedAt > STABLE_MS) attempt = 0;
        const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
        attempt += 1;
        onState("closed");
        this.after(Math.round(this.#clock.random() * cap), open);
      });
    };
    this.add(() => {
      source?.close();
      source = null;
    });
    open();
  }

  /** Ends the scope: every timer cleared, every stream closed, every child disposed. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const disposers = [...this.#disposers];
    this.#disposers.clear();
    for (const dispose of disposers) dispose();
  }
}

/** The application's scope: disposed once, when the sign-in ends. */
export const rootScope = new Scope();
