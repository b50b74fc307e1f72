import { config, type Env } from "../env.js";
import type { ErrorCode } from "../errors.js";
import type { McpOrigin } from "../flows/context.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import { type JobInfo, type JobStart, newJobId } from "./job-record.js";
import { waitBoundMs } from "./timing.js";
import { waitForJob } from "./wait-for-job.js";

/** Where a result names the job that produced it (`_meta` of the MCP tool result). */
export const JOB_ID_META = "oubliette/job_id";

/** An ended job's outcome as a call's answer: its value, or its error. */
export type JobOutcomeAnswer = { jobId: string } & (
  | { ok: true; value: unknown }
  | { ok: false; code: ErrorCode; message: string }
);

/**
 * A call's answer: the job's outcome (it ended in time), what to know to find it later, or — for
 * a caller that takes MCP tasks — the job that goes on, to be answered as a task.
 */
export type JobCallAnswer = JobOutcomeAnswer | { jobId: string; task: JobInfo };

export interface JobCall extends Omit<JobStart, "jobId" | "mcp" | "stateless"> {
  env: Env;
  mcp: McpOrigin | null;
  signal?: AbortSignal | undefined;
  log: Log;
  /**
   * The caller takes MCP tasks (a 2026-07-28 request declaring the Tasks extension): the call
   * waits at most the task shortcut bound, and a job that goes on is answered as a task.
   */
  tasks?: boolean;
}

/**
 * A call of an action that runs as a job: the job is started, then, by the timing class, waited
 * for up to its bound (answering its outcome as a call in place would) or answered at once with
 * its id — or as a task, for a caller that takes them, after at most the task shortcut bound. A
 * cancelled MCP request cancels the job.
 */
export async function callAsJob(call: JobCall): Promise<JobCallAnswer> {
  const { env, mcp, signal, log, tasks = false, ...start } = call;
  const jobId = newJobId();
  // `start` returns once the record is saved: a task answered after it is durably created.
  const started = await objects
    .job(env, jobId)
    .start({ ...start, jobId, mcp: mcp?.via ?? null, stateless: mcp !== null && mcp.via === null });
  if (!started.ok) return { jobId, ok: false, ...started.error };
  const cfg = config(env);
  const classBoundMs = waitBoundMs(call.timing, cfg);
  const boundMs = tasks ? Math.min(classBoundMs, cfg.taskShortcutMs) : classBoundMs;
  const goesOn = (info: JobInfo): JobCallAnswer => (tasks ? { jobId, task: info } : pointer(info));
  if (boundMs === 0) return goesOn(started.value);
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
  return end === "ended" ? outcome(info) : goesOn(info);
}

/** An ended job's outcome as the call's answer (a job still going on: its pointer). */
export function outcome(info: JobInfo): JobOutcomeAnswer {
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
function pointer(info: JobInfo): JobOutcomeAnswer {
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
