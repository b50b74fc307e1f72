import { z } from "zod";

/**
 * A job's events: it started, reported progress, ended. The MCP session whose call started the
 * job hears them as `notifications/message` (logger `oubliette.job`); a job that concerns a droid
 * session (the droid called the tool with its key, or the job acts on that session) also writes
 * them into that session's event log, so every subscriber of the session sees them like its
 * other events (MCP streams, SSE, WebSocket, `session events`).
 */
const job = {
  job_id: z.string(),
  /** `tool.action`, or the tool's name for a standalone tool. */
  tool: z.string(),
};

export const JOB_END_STATUSES = ["complete", "failed", "cancelled"] as const;

/** The variants without their time (`at` standalone, `ts` in a session's log). */
export const JobEventBodySchemas = [
  z.object({ ...job, type: z.literal("job_started"), project_id: z.string().nullable() }),
  z.object({ ...job, type: z.literal("job_progress"), message: z.string() }),
  z.object({
    ...job,
    type: z.literal("job_ended"),
    project_id: z.string().nullable(),
    status: z.enum(JOB_END_STATUSES),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  }),
] as const;

export type JobEventBody = z.infer<(typeof JobEventBodySchemas)[number]>;
export type JobEvent = JobEventBody & { at: string };
export type JobEventType = JobEvent["type"];

const JOB_EVENT_TYPES: ReadonlySet<string> = new Set(
  JobEventBodySchemas.map((schema) => schema.shape.type.value),
);

export function isJobEventType(type: string): type is JobEventType {
  return JOB_EVENT_TYPES.has(type);
}
