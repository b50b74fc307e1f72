/**
 * Reconnect delays: capped exponential backoff with full jitter (cockatiel computes the capped
 * exponential ceiling), reset only after a connection stayed up for a stable period, as
 * cloudflared does. Randomness is injectable so tests are deterministic.
 */
import { ExponentialBackoff, type IBackoff, noJitterGenerator } from "cockatiel";

export interface BackoffOptions {
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** A connection that lived at least this long resets the backoff. */
  stablePeriodMs?: number;
  /** Returns a number in [0, 1); defaults to Math.random. */
  random?: () => number;
}

/** Tracks reconnect attempts and returns the delay before the next one. */
export class ReconnectBackoff {
  readonly #ceilings: ExponentialBackoff<number>;
  readonly #stablePeriodMs: number;
  readonly #random: () => number;
  #state: IBackoff<unknown> | undefined;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.#ceilings = new ExponentialBackoff({
      generator: noJitterGenerator,
      initialDelay: options.initialDelayMs ?? 250,
      maxDelay: options.maxDelayMs ?? 30_000,
    });
    this.#stablePeriodMs = options.stablePeriodMs ?? 10_000;
    this.#random = options.random ?? Math.random;
  }

  /** Number of consecutive attempts since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** Delay before the next attempt: uniform in [0, min(max, initial * 2^attempt)). */
  next(): number {
    this.#attempt += 1;
    this.#state = this.#state ? this.#state.next(undefined) : this.#ceilings.next();
    return Math.floor(this.#random() * this.#state.duration);
  }

  /** Reports how long the last connection stayed up; a stable one resets the backoff. */
  connectionEnded(upForMs: number): void {
    if (upForMs >= this.#stablePeriodMs) this.reset();
  }

  reset(): void {
    this.#attempt = 0;
    this.#state = undefined;
  }
}
