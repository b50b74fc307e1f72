import type { Config } from "../env.js";

/**
 * How long an action takes, and so how a call of it is answered (seeds/004; bounds below).
 * Every class but `sync` runs as a job (the `job` tool reads it):
 * - sync: the call answers the handler's result;
 * - async_short / async_medium: the call waits for the job up to its bound (30 s / 120 s), then
 *   answers the result, or `{job_id, status: "running"}` when the work goes on;
 * - async_long: the call answers `{job_id}` at once;
 * - fire_and_forget: the call answers `{job_id, status: "accepted"}` at once; nobody is expected
 *   to wait, but a failure is kept (`job list status=failed`).
 */
export type Timing = "sync" | "async_short" | "async_medium" | "async_long" | "fire_and_forget";

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
