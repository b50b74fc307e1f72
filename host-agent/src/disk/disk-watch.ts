/**
 * Measures a running project's volume every few seconds and reports when it reaches its bound
 * (once per crossing: it reports again only after the use went back below the bound). Measuring
 * failures are logged and the next round tries again; rounds never overlap.
 */
import type { Logger } from "../../../lib/log.js";
import type { ProjectVolume, VolumeUsage } from "./project-volume.js";

export interface DiskWatchOptions {
  volume: ProjectVolume;
  intervalMs: number;
  logger: Logger;
  /** The bound was reached. */
  onExceeded(usage: VolumeUsage): void;
}

export class DiskWatch {
  readonly #o: DiskWatchOptions;
  #timer: NodeJS.Timeout | null = null;
  #over = false;
  #stopped = false;

  constructor(options: DiskWatchOptions) {
    this.#o = options;
  }

  /** Whether the volume was at its bound at the last measure. */
  get exceeded(): boolean {
    return this.#over;
  }

  start(): void {
    this.#stopped = false;
    if (this.#timer === null) this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Measures now (also between rounds: before a session starts, say). */
  async check(): Promise<VolumeUsage | null> {
    try {
      const usage = await this.#o.volume.usage();
      if (usage.exceeded && !this.#over) {
        this.#over = true;
        this.#o.logger.warn(
          { used_mb: mib(usage.usedBytes), limit_mb: mib(usage.limitBytes) },
          "the project reached its disk bound",
        );
        this.#o.onExceeded(usage);
      } else if (!usage.exceeded) {
        this.#over = false;
      }
      return usage;
    } catch (error) {
      this.#o.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        "disk measure failed",
      );
      return null;
    }
  }

  #schedule(): void {
    this.#timer = setTimeout(async () => {
      await this.check();
      if (!this.#stopped) this.#schedule();
    }, this.#o.intervalMs);
    this.#timer.unref();
  }
}

export function mib(bytes: number): number {
  return Math.round(bytes / (1024 * 1024));
}
