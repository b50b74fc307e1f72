import { type CallerPrincipal, stillValid } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError, type Result, unwrap } from "../errors.js";
import type { McpOrigin } from "../flows/context.js";
import { objects } from "../objects/keys.js";
import { isEnded, type JobInfo } from "./job-record.js";

/** How often a wait reports progress when no MCP session asks (a call from outside MCP). */
const DEFAULT_SLICE_MS = 5_000;
/** How often a waiting caller's token is checked again (a revoked token stops waiting). */
const TOKEN_RECHECK_MS = 1_000;

/** Why a wait stopped: the job ended, the time was up, the client left, or the request was cancelled. */
export type WaitEnd = "ended" | "bound" | "gone" | "aborted";

/**
 * Waits for job `jobId` to end, for at most `boundMs`. The job's object is asked in slices of
 * one keep-alive period and between slices the client hears progress (`notifications/progress`
 * when its request carried a progressToken; the job's own progress message when it reported one).
 * A client found gone, or an aborted `signal` (the MCP request was cancelled), ends the wait;
 * the waiting `principal`'s token is checked again every second, as a stream's is.
 */
export async function waitForJob(
  env: Env,
  jobId: string,
  options: {
    boundMs: number;
    mcp: McpOrigin | null;
    signal?: AbortSignal | undefined;
    principal?: CallerPrincipal | undefined;
  },
): Promise<{ info: JobInfo; end: WaitEnd }> {
  const { boundMs, mcp, signal, principal } = options;
  const job = objects.job(env, jobId);
  const read = (waitMs: number): Promise<Result<JobInfo>> => job.wait(waitMs);
  const started = Date.now();
  const until = started + boundMs;
  const progressEveryMs = mcp?.progressEveryMs ?? DEFAULT_SLICE_MS;
  const sliceMs = Math.min(progressEveryMs, principal ? TOKEN_RECHECK_MS : Number.POSITIVE_INFINITY);
  let reportedAt = started;
  for (;;) {
    const step = Math.max(0, Math.min(until - Date.now(), sliceMs));
    const answer = await untilAborted(read(step), signal);
    if (principal && !(await stillValid(env, principal))) {
      throw new AppError(
        "unauthorized",
        `token ${principal.tokenId} was revoked while it waited for the job`,
      );
    }
    if (answer === null) return { info: unwrap(await job.get()), end: "aborted" };
    const info = unwrap(answer);
    if (isEnded(info.status)) return { info, end: "ended" };
    if (Date.now() >= until) return { info, end: "bound" };
    if (Date.now() - reportedAt < progressEveryMs) continue;
    reportedAt = Date.now();
    const waited = (Date.now() - started) / 1000;
    const message = info.progress?.message ?? `${info.tool} ${info.status} for ${Math.round(waited)} s`;
    if (mcp && !mcp.progress({ progress: waited, total: boundMs / 1000, message }))
      return { info, end: "gone" };
  }
}

/** `promise`, or null as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T | null> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
