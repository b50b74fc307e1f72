import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import { McpLogger } from "../../../protocol/events.js";
import type { JobEvent } from "../../../protocol/job-events.js";

export type { JobEvent } from "../../../protocol/job-events.js";

/** The logger name of job events on an MCP stream. */
export const JOB_LOGGER = McpLogger.job;

/** Failures are warnings; the rest is information. */
export function jobEventLevel(event: Pick<JobEvent, "type"> & { status?: string }): LoggingLevel {
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
