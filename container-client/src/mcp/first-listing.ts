/**
 * The tool list an agent reads first is complete. Several CLIs (Codex, Gemini CLI) read it once,
 * at start, and never again, whatever `notifications/tools/list_changed` says; so the first
 * `tools/list` waits (bounded) until every source of tools has spoken once: the caller's tools
 * (the first `caller_tools_config`, or a link that will never get one) and Oubliette's tools (the
 * first listing with the droid's key, answered or refused). Later lists answer at once.
 */
export type ToolSource = "caller_tools" | "oubliette_tools";

export class FirstListing {
  readonly #pending: Set<ToolSource>;
  readonly #ready: Promise<void>;
  #resolve: () => void = () => {};

  constructor(sources: readonly ToolSource[]) {
    this.#pending = new Set(sources);
    this.#ready = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    if (this.#pending.size === 0) this.#resolve();
  }

  /** `source` has spoken (its first answer, or it never will). */
  settle(source: ToolSource): void {
    if (!this.#pending.delete(source)) return;
    if (this.#pending.size === 0) this.#resolve();
  }

  /** The sources not heard from yet. */
  get waitingFor(): ToolSource[] {
    return [...this.#pending];
  }

  /** Resolves once every source has spoken, or after `timeoutMs` (resolving with what is missing). */
  async wait(timeoutMs: number): Promise<ToolSource[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([this.#ready, timeout]);
    clearTimeout(timer);
    return this.waitingFor;
  }
}
