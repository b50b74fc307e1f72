import type { Config } from "../env.js";
import type { Timing } from "../tools/define.js";

/** How long the outcome of an ended job is kept (`job get`, `job list status=failed`). */
export const JOB_TTL_MS = 24 * 60 * 60_000;

/** The timing classes that run as jobs. */
export type JobTiming = Exclude<Timing, "sync">;

/** How long a call of `timing` waits for its job before answering the job id (0: not at all). */
export function waitBoundMs(timing: JobTiming, cfg: Config): number {
  switch (timing) {
    case "async_short":
      return cfg.jobShortWaitMs;
    case "async_medium":
      return cfg.jobMediumWaitMs;
    case "async_long":
    case "fire_and_forget":
      return 0;
  }
}

/** A timing class in a few words, for tool descriptions. */
export function describeTiming(timing: Timing): string {
  switch (timing) {
    case "sync":
      return "sync";
    case "async_short":
      return "async_short: a job, waited for up to 30 s, then answered with its job_id";
    case "async_medium":
      return "async_medium: a job, waited for up to 120 s, then answered with its job_id";
    case "async_long":
      return "async_long: answered with its job_id at once";
    case "fire_and_forget":
      return "fire_and_forget: accepted at once as a job";
  }
}
