import { z } from "zod";
import { AppError } from "../../errors.js";
import { outcome } from "../../jobs/call-as-job.js";
import { mayUseJob } from "../../jobs/job-access.js";
import { isEnded, JobIdSchema, type JobInfo } from "../../jobs/job-record.js";
import { JOB_TTL_MS } from "../../jobs/timing.js";
import { objects } from "../../objects/keys.js";
import { callerTools } from "../../tools/catalog.js";
import { type CallToolResult, callTool, jobResult } from "../../tools/dispatch.js";
import { jobTool } from "../../tools/job-tool.js";
import { McpErrorCode, RpcError } from "../json-rpc.js";
import { declaresTasks, TASKS_EXTENSION } from "./envelope.js";
import type { ModernCall, ModernMethod } from "./method.js";

/**
 * Jobs as MCP tasks (extension `io.modelcontextprotocol/tasks`, SEP-2663): a task id is a job id,
 * and a task is a view of its job (docs/mcp-2026-07-28.md §6.4). Jobs never ask for input, so no
 * task is ever `input_required`; and a job has no JSON-RPC fault to report, so none is `failed`
 * either: a failed job is a tool call that completed with `isError: true`.
 */

export const TaskStatusSchema = z.enum(["working", "input_required", "completed", "failed", "cancelled"]);

/** A task's metadata, flat (as `CreateTaskResult` carries it, beside `resultType: "task"`). */
export const TaskSchema = z
  .object({
    taskId: z.string(),
    status: TaskStatusSchema,
    statusMessage: z.string().optional(),
    createdAt: z.iso.datetime(),
    lastUpdatedAt: z.iso.datetime(),
    /** From creation; null: unlimited. */
    ttlMs: z.number().int().positive().nullable(),
    pollIntervalMs: z.number().int().positive().optional(),
  })
  .strict();
export type Task = z.infer<typeof TaskSchema>;

/** A task as `tasks/get` answers it: a completed one inlines the tool call's result. */
export type DetailedTask = Task & { result?: CallToolResult };

const TaskParamsSchema = z.object({ taskId: z.string().min(1) });
const UpdateParamsSchema = TaskParamsSchema.extend({
  // Answers to input requests; a job asks none, so every key is one not outstanding (ignored).
  inputResponses: z.record(z.string(), z.unknown()).optional(),
});

/** What a token is told of a task that does not exist, expired, or is not its to read. */
const NOT_FOUND = "Failed to retrieve task: Task not found";
const CANCEL_REASON = "cancelled by the client (tasks/cancel)";
const ToolErrorSchema = z.object({ error: z.object({ code: z.string().optional(), message: z.string() }) });

/** The task a job is seen as, without an inlined result. */
export function taskOf(info: JobInfo): Task {
  const task: Task = {
    taskId: info.job_id,
    status: statusOf(info),
    createdAt: info.created_at,
    lastUpdatedAt: lastUpdate(info),
    // Outcomes are kept JOB_TTL_MS after the end: from creation, at least that while it runs.
    ttlMs: info.expires_at === null ? JOB_TTL_MS : Date.parse(info.expires_at) - Date.parse(info.created_at),
    pollIntervalMs: info.timing === "async_short" || info.timing === "async_medium" ? 2_000 : 5_000,
  };
  const message = info.status === "cancelled" ? info.cancel?.reason : info.progress?.message;
  if (message !== undefined && task.status !== "completed") task.statusMessage = message;
  return task;
}

/** `tasks/get`'s view of a job: an ended one inlines the result its call would have answered. */
export function detailedTask(info: JobInfo): DetailedTask {
  const task: DetailedTask = taskOf(info);
  if (task.status === "completed") task.result = jobResult(outcome(info));
  return task;
}

/** The flat `CreateTaskResult` answering a `tools/call` whose job goes on. */
export function createTaskResult(info: JobInfo): Record<string, unknown> {
  return { resultType: "task", ...taskOf(info) };
}

function statusOf(info: JobInfo): Task["status"] {
  if (!isEnded(info.status)) return "working";
  return info.status === "cancelled" ? "cancelled" : "completed";
}

function lastUpdate(info: JobInfo): string {
  const times = [info.created_at, info.started_at, info.progress?.at, info.cancel?.at, info.ended_at];
  const latest = Math.max(...times.flatMap((at) => (at ? [Date.parse(at)] : [])));
  return new Date(latest).toISOString();
}

/** The task a request names, parsed at the boundary. */
function taskIdOf(call: ModernCall, method: string): string {
  const params = TaskParamsSchema.safeParse(call.params);
  if (!params.success)
    throw new RpcError(McpErrorCode.invalidParams, `${method} needs params.taskId (a string)`);
  return params.data.taskId;
}

/** The job a task id names when this token may read it; otherwise not found (never saying which). */
async function visibleJob(call: ModernCall, taskId: string): Promise<JobInfo> {
  const notFound = new RpcError(McpErrorCode.invalidParams, NOT_FOUND);
  // Not an id this server could have made: no job object is woken to say so.
  if (!JobIdSchema.safeParse(taskId).success) throw notFound;
  const got = await objects.job(call.env, taskId).get();
  if (!got.ok) {
    if (got.error.code === "not_found") throw notFound;
    throw new AppError(got.error.code, got.error.message);
  }
  if (!mayUseJob(call.principal, "read", got.value)) throw notFound;
  return got.value;
}

/** Task methods exist for a request that declared the extension (per request, never remembered). */
const taskRules = {
  routedBy: "taskId",
  missingCapabilities: (capabilities) =>
    declaresTasks(capabilities) ? null : { extensions: { [TASKS_EXTENSION]: {} } },
} as const satisfies Pick<ModernMethod, "routedBy" | "missingCapabilities">;

/** `tasks/get`: the task's current state, with the result inlined once completed. */
export const tasksGet: ModernMethod = {
  ...taskRules,
  async handle(call) {
    return { ...detailedTask(await visibleJob(call, taskIdOf(call, "tasks/get"))) };
  },
};

/** `tasks/update`: an empty ack for a task this token can see (its answers are never needed). */
export const tasksUpdate: ModernMethod = {
  ...taskRules,
  async handle(call) {
    const params = UpdateParamsSchema.safeParse(call.params);
    if (!params.success)
      throw new RpcError(McpErrorCode.invalidParams, "tasks/update needs params.taskId (a string)");
    await visibleJob(call, params.data.taskId);
    return {};
  },
};

/**
 * `tasks/cancel`: `job cancel`, with its authority and audit entry, answered with an empty ack —
 * also when the job had already ended (cancellation is cooperative: the ack promises nothing).
 */
export const tasksCancel: ModernMethod = {
  ...taskRules,
  async handle(call) {
    const taskId = taskIdOf(call, "tasks/cancel");
    const result = await callTool(
      callerTools,
      jobTool.name,
      { action: "cancel", job_id: taskId, reason: CANCEL_REASON },
      {
        env: call.env,
        principal: call.principal,
        mcp: call.origin,
        log: call.log,
        waitUntil: call.waitUntil,
        runsJobs: true,
        signal: call.signal,
      },
    );
    if (!result.isError) return {};
    const error = ToolErrorSchema.parse(result.structuredContent).error;
    switch (error.code) {
      case "conflict":
        return {};
      case "forbidden":
        // A token that may read the job learns why; any other is told there is no such task.
        await visibleJob(call, taskId);
        throw new RpcError(McpErrorCode.invalidParams, `Failed to cancel task: ${error.message}`);
      case "not_found":
      case "invalid_arguments":
        throw new RpcError(McpErrorCode.invalidParams, NOT_FOUND);
      default:
        throw new RpcError(McpErrorCode.internalError, `Failed to cancel task: ${error.message}`);
    }
  },
};
