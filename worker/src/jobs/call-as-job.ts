import { config, type Env } from "../env.js";
import type { ErrorCode } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import type { McpOrigin } from "../tools/context.js";
import { type JobInfo, type JobStart, newJobId } from "./job-record.js";
import { waitBoundMs } from "./timing.js";
import { waitForJob } from "./wait-for-job.js";

/** Where a result names the job that produced it (`_meta` of the MCP tool result). */
export const JOB_ID_META = "oubliette/job_id";

/** A call's answer: the job's outcome (it ended in time), or what to know to find it later. */
export type JobCallAnswer = { jobId: string } & (
  | { ok: true; value: unknown }
  | { ok: false; code: ErrorCode; message: string }
);

export interface JobCall extends Omit<JobStart, "jobId" | "mcp" | "stateless"> {
  env: Env;
  mcp: McpOrigin | null;
  signal?: AbortSignal | undefined;
  log: Log;
}

/**
 * A call of an action that runs as a job: the job is started, then, by the timing class, waited
 * for up to its bound (answering its outcome as a call in place would) or answered at once with
 * its id. A cancelled MCP request cancels the job.
 */
export async function callAsJob(call: JobCall): Promise<JobCallAnswer> {
  const { env, mcp, signal, log, ...start } = call;
  const jobId = newJobId();
  const started = await objects
    .job(env, jobId)
    .start({ ...start, jobId, mcp: mcp?.via ?? null, stateless: mcp !== null && mcp.via === null });
  if (!started.ok) return { jobId, ok: false, ...started.error };
  const boundMs = waitBoundMs(call.timing, config(env));
  if (boundMs === 0) return pointer(started.value);
  const { info, end } = await waitForJob(env, jobId, { boundMs, mcp, signal });
  // A stateless client that closes its response stream has cancelled the request (2026-07-28).
  if (end === "aborted" || (end === "gone" && signal?.aborted)) {
    const why = signal?.reason instanceof Error ? ` (${signal.reason.message})` : "";
    const reason = `the MCP request that waited for it was cancelled${why}`;
    const cancelled = await objects
      .job(env, jobId)
      .cancel(reason)
      .catch((err: unknown) => log.warn("could not cancel a job", { job: jobId, error: errorMessage(err) }));
    return outcome(cancelled?.ok ? cancelled.value : info);
  }
  return end === "ended" ? outcome(info) : pointer(info);
}

/** An ended job's outcome as the call's answer. */
export function outcome(info: JobInfo): JobCallAnswer {
  const jobId = info.job_id;
  switch (info.status) {
    case "complete":
      return { jobId, ok: true, value: info.result };
    case "failed":
      return { jobId, ok: false, code: info.error?.code ?? "internal", message: info.error?.message ?? "" };
    case "cancelled":
      return {
        jobId,
        ok: false,
        code: "cancelled",
        message: `job ${jobId} (${info.tool}) was cancelled: ${info.cancel?.reason ?? "no reason given"}`,
      };
    default:
      return pointer(info);
  }
}

/** The answer of a call whose job goes on: its id, and how to get its outcome. */
function pointer(info: JobInfo): JobCallAnswer {
  return {
    jobId: info.job_id,
    ok: true,
    value: {
      job_id: info.job_id,
      status: info.timing === "fire_and_forget" ? "accepted" : info.status,
      tool: info.tool,
      timing: info.timing,
      next: "job wait (or job get) with this job_id answers its outcome",
    },
  };
}
