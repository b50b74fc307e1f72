import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import type { ErrorInfo } from "../errors.js";
import type { JobStatus } from "./job-record.js";

/** The logger name of job events on an MCP stream. */
export const JOB_LOGGER = "oubliette.job";

/**
 * A job's events, sent to the MCP session whose call started it (as `notifications/message`
 * with logger `oubliette.job`, like session events): it started, reported progress, ended.
 */
export type JobEvent =
  | { type: "job_started"; job_id: string; tool: string; project_id: string | null; at: string }
  | { type: "job_progress"; job_id: string; tool: string; message: string; at: string }
  | {
      type: "job_ended";
      job_id: string;
      tool: string;
      project_id: string | null;
      status: JobStatus;
      error?: ErrorInfo;
      at: string;
    };

/** Failures are warnings; the rest is information. */
export function jobEventLevel(event: JobEvent): LoggingLevel {
  return event.type === "job_ended" && event.status === "failed" ? "warning" : "info";
}

/** The event as the JSON-RPC notification an MCP stream carries. */
export function jobEventMessage(event: JobEvent): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    method: "notifications/message",
    params: { level: jobEventLevel(event), logger: JOB_LOGGER, data: event },
  });
}
