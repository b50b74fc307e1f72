/**
 * One session's model usage and budget, as the proxy counts it. The totals start from what the
 * session object stored (so a restarted host-agent goes on counting) and are reported after every
 * metered response; once the estimated cost reaches the budget, further requests are refused.
 */
import { type UsageTotals, ZERO_USAGE } from "../../../protocol/usage.js";

export interface SessionMeterOptions {
  sessionId: string;
  /** The project's `max_cost_usd`; none: no limit. */
  budgetUsd?: number | undefined;
  /** New totals (and, when a request was refused, why). */
  report(totals: UsageTotals, refused?: string): void;
}

export class SessionMeter {
  readonly sessionId: string;
  readonly #o: SessionMeterOptions;
  #totals: UsageTotals = { ...ZERO_USAGE };
  #budget: number | undefined;

  constructor(options: SessionMeterOptions) {
    this.sessionId = options.sessionId;
    this.#o = options;
    this.#budget = options.budgetUsd;
  }

  get totals(): UsageTotals {
    return { ...this.#totals };
  }

  /** Goes on from totals stored earlier (never backwards). */
  resume(stored: UsageTotals): void {
    if (stored.cost_usd >= this.#totals.cost_usd && stored.requests >= this.#totals.requests)
      this.#totals = { ...stored };
  }

  /** The session object's budget (it outlives this process; a re-adopted session learns it at hello). */
  setBudget(budgetUsd: number): void {
    this.#budget = budgetUsd;
  }

  /** Why the next request must be refused, or null. */
  refusal(): string | null {
    const budget = this.#budget;
    if (budget === undefined || this.#totals.cost_usd < budget) return null;
    return `this session's model budget is spent: $${this.#totals.cost_usd.toFixed(4)} of max_cost_usd $${budget} (project limit)`;
  }

  /** A refused request: reported so the session's events say why its model stopped answering. */
  refused(reason: string): void {
    this.#o.report(this.totals, reason);
  }

  add(inputTokens: number, outputTokens: number, costUsd: number): void {
    this.#totals = {
      requests: this.#totals.requests + 1,
      input_tokens: this.#totals.input_tokens + inputTokens,
      output_tokens: this.#totals.output_tokens + outputTokens,
      cost_usd: this.#totals.cost_usd + costUsd,
    };
    this.#o.report(this.totals);
  }
}
