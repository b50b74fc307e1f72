import { z } from "zod";
import type { JsonNode } from "../../../protocol/json.js";
import { randomHex } from "../auth/digest.js";
import type { Target } from "../auth/scopes.js";
import { type CallerPrincipal, CallerPrincipalSchema } from "../auth/tokens.js";
import { ErrorCodeSchema, type ErrorInfo } from "../errors.js";
import type { RecordFormat, SameShape } from "../objects/stored-record.js";
import type { Via } from "../session/types.js";
import type { JobTiming } from "./timing.js";

export const JobIdSchema = z
  .string()
  .regex(/^job_[0-9a-f]{24}$/, "a job id looks like job_ and 24 hex digits")
  .describe("Job id (a call that became a job answered it).");

export function newJobId(): string {
  return `job_${randomHex(12)}`;
}

export const JOB_STATUSES = ["pending", "running", "complete", "failed", "cancelled"] as const;
export const JobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatusSchema>;

export function isEnded(status: JobStatus): boolean {
  return status === "complete" || status === "failed" || status === "cancelled";
}

/** What a job is: the call it stands for. */
export interface JobOrigin {
  jobId: string;
  /** Tool and action, as the catalogue names them. */
  tool: string;
  action: string;
  /** `tool.action`, or the tool's name for a standalone tool. */
  label: string;
  timing: JobTiming;
  /** The action's target and the project its arguments name: whose job it is. */
  target: Target;
  projectId: string | null;
  /** The MCP session that called, which hears the job's events. */
  mcp: Via | null;
  /**
   * The call came as a stateless (2026-07-28) MCP request: no session hears the job, and what it
   * starts defaults as such a caller needs (see `defaultPresence`). Absent in records of old jobs.
   */
  stateless?: boolean;
  /** The droid session that called with its key: the job's events go into its log too. */
  viaSession: string | null;
}

/** What the tool call that became a job hands its object, to run later from its alarm. */
export interface JobStart extends JobOrigin {
  /** The call's arguments as given (parsed again by the job, at its boundary). */
  arguments: Record<string, unknown>;
  principal: CallerPrincipal;
}

/**
 * What became of a cancel: the work `stopped` (it was aborted, or never started), is still
 * `running` (it could not be interrupted; it goes on to its end) or `finished` after the cancel
 * anyway (its outcome is kept beside the cancel).
 */
export type CancelledWork = "stopped" | "running" | "finished";

/** A job as its object keeps it. */
export interface JobRecord extends JobOrigin {
  tokenId: string;
  status: JobStatus;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  expiresAt: number | null;
  /** The handler's value (complete; or a late outcome of a cancelled job). */
  result?: JsonNode | undefined;
  error: ErrorInfo | null;
  progress: { message: string; at: number } | null;
  cancel: { reason: string; at: number; work: CancelledWork } | null;
  /**
   * The droid session the job acts on (its arguments name it, or the work started it): the
   * job's events go into its log too.
   */
  sessionId: string | null;
  /** The arguments and principal, only until the work starts (a spawn's may hold a key). */
  pending: Pick<JobStart, "arguments" | "principal"> | null;
}

/** A job as `job get` shows it. */
export interface JobInfo {
  job_id: string;
  tool: string;
  project_id: string | null;
  target: Target;
  timing: JobTiming;
  status: JobStatus;
  token_id: string;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  /** When the outcome is forgotten. */
  expires_at: string | null;
  result?: JsonNode;
  error?: ErrorInfo;
  progress?: { message: string; at: string };
  cancel?: { reason: string; at: string; work: CancelledWork };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The job as `job get` shows it; without its result for listings (an exec's output is large). */
export function jobInfo(record: JobRecord, withResult = true): JobInfo {
  const info: JobInfo = {
    job_id: record.jobId,
    tool: record.label,
    project_id: record.projectId,
    target: record.target,
    timing: record.timing,
    status: record.status,
    token_id: record.tokenId,
    created_at: iso(record.createdAt) as string,
    started_at: iso(record.startedAt),
    ended_at: iso(record.endedAt),
    expires_at: iso(record.expiresAt),
  };
  if (withResult && record.result !== undefined) info.result = record.result;
  if (record.error) info.error = record.error;
  if (record.progress)
    info.progress = { message: record.progress.message, at: iso(record.progress.at) as string };
  if (record.cancel) info.cancel = { ...record.cancel, at: iso(record.cancel.at) as string };
  return info;
}

const ViaSchema = z.object({ mcpSessionId: z.string(), streaming: z.boolean() });

/** A job's record as stored (read back through `JOB_RECORD`: parsed, never cast). */
const JobRecordSchema = z.object({
  jobId: z.string(),
  tool: z.string(),
  action: z.string(),
  label: z.string(),
  timing: z.enum(["async_short", "async_medium", "async_long", "fire_and_forget"]),
  target: z.enum(["global", "project"]),
  projectId: z.string().nullable(),
  mcp: ViaSchema.nullable(),
  stateless: z.boolean().optional(),
  viaSession: z.string().nullable(),
  tokenId: z.string(),
  status: JobStatusSchema,
  createdAt: z.number(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  expiresAt: z.number().nullable(),
  result: z.custom<JsonNode>((value) => value !== undefined).optional(),
  error: z.object({ code: ErrorCodeSchema, message: z.string() }).nullable(),
  progress: z.object({ message: z.string(), at: z.number() }).nullable(),
  cancel: z
    .object({ reason: z.string(), at: z.number(), work: z.enum(["stopped", "running", "finished"]) })
    .nullable(),
  sessionId: z.string().nullable(),
  pending: z
    .object({ arguments: z.record(z.string(), z.unknown()), principal: CallerPrincipalSchema })
    .nullable(),
});

/** How a job's record is stored: version 1 is the first with a version (0: the same shape, bare). */
export const JOB_RECORD = { kind: "job", version: 1, schema: JobRecordSchema } satisfies RecordFormat<
  typeof JobRecordSchema
>;

// The stored shape and the record the object works with are one: a change to either fails here.
const sameShape: SameShape<z.output<typeof JobRecordSchema>, JobRecord> = true;
void sameShape;
