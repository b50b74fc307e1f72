import { z } from "zod";
import { AgentRestartedSchema, CommonAgentEventSchemas, DroidStatusSchema } from "./agent-events.js";
import { PushOutcomeSchema } from "./tunnel-projects.js";

export { type DroidStatus, DroidStatusSchema } from "./agent-events.js";

import { ApprovalDeciderSchema, ApprovalKindSchema } from "./approvals.js";
import { CallerToolListSchema } from "./caller-tools.js";
import { isJobEventType, JobEventBodySchemas } from "./job-events.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";
import { NetworkBlockedSchema } from "./network-activity.js";
import { SetupEventSchema } from "./setup.js";
import { UsageTotalsSchema } from "./usage.js";

/**
 * Session events: what callers see on MCP streams (`notifications/message`), on
 * `GET /v1/sessions/:id/events` (SSE), on `GET /v1/sessions/:id/ws` and from `session events`.
 * Every event has the session's monotonic `index`.
 */
const base = { session_id: z.string(), index: z.number().int().nonnegative(), ts: z.string() };

export const SessionEventSchema = z.discriminatedUnion("type", [
  z.object({ ...base, type: z.literal("session_started"), host_id: z.string(), runtime: z.string() }),
  z.object({ ...base, type: z.literal("session_ended"), reason: z.string() }),
  z.object({
    ...base,
    type: z.literal("droid_status"),
    status: DroidStatusSchema,
    exit_code: z.number().int().nullable().optional(),
    message: z.string().optional(),
  }),
  z.object({
    ...base,
    type: z.literal("droid_output"),
    data: JsonValueSchema.optional(),
    text: z.string().optional(),
  }),
  z.object({ ...base, type: z.literal("droid_log"), text: z.string() }),
  AgentRestartedSchema.extend(base),
  ...CommonAgentEventSchemas.map((schema) => schema.extend(base)),
  /** The session's model usage so far, after each metered model response (host model proxy). */
  z.object({ ...base, type: z.literal("usage"), ...UsageTotalsSchema.shape }),
  z.object({ ...base, type: z.literal("message_sent"), seq: z.number().int(), text: z.string() }),
  /** A message the host has not confirmed written to the droid in time; it stays queued and is re-sent. */
  z.object({
    ...base,
    type: z.literal("message_undelivered"),
    seq: z.number().int(),
    waited_seconds: z.number().int(),
    message: z.string(),
  }),
  /** A message reported undelivered has reached the droid after all. */
  z.object({ ...base, type: z.literal("message_delivered"), seq: z.number().int() }),
  z.object({
    ...base,
    type: z.literal("caller_tools_declared"),
    caller_id: z.string().nullable(),
    tools: CallerToolListSchema,
  }),
  z.object({
    ...base,
    type: z.literal("caller_tool_request"),
    request_id: z.string(),
    caller_id: z.string(),
    tool: z.string(),
    arguments: JsonObjectSchema,
    deadline: z.string(),
  }),
  /**
   * A request ended without the caller's answer reaching the droid: it timed out, the droid
   * cancelled it (reason `cancelled`: nobody waits for an answer any more), the host was lost...
   * An answer sent after this event is refused.
   */
  z.object({
    ...base,
    type: z.literal("caller_tool_failed"),
    request_id: z.string(),
    tool: z.string(),
    reason: z.string(),
    message: z.string(),
  }),
  /**
   * An agent asks before an action its session's policy wants asked about: what exactly (the
   * command, the file and its change, the tool and its arguments), where, and until when. Answer
   * with `approval_response`; no answer by the deadline is a deny.
   */
  z.object({
    ...base,
    type: z.literal("approval_request"),
    request_id: z.string(),
    agent: z.string(),
    kind: ApprovalKindSchema,
    command: z.string().optional(),
    path: z.string().optional(),
    diff: z.string().optional(),
    tool: z.string().optional(),
    arguments: JsonObjectSchema.optional(),
    /** `network`: the host, its port, and the method when the gate saw one. */
    host: z.string().optional(),
    port: z.number().int().optional(),
    method: z.string().optional(),
    cwd: z.string().optional(),
    summary: z.string(),
    deadline: z.string(),
  }),
  /**
   * An approval request was allowed: once, for its kind and pattern for the rest of the session,
   * or (a `network` request) for the project, whose network allowlist now holds the host.
   */
  z.object({
    ...base,
    type: z.literal("approval_granted"),
    request_id: z.string(),
    kind: ApprovalKindSchema,
    summary: z.string(),
    scope: z.enum(["once", "session", "project"]),
    by: ApprovalDeciderSchema,
    /** The token (or OAuth grant's token) that answered, when a person did. */
    answered_by: z.string().optional(),
  }),
  /** An approval request was denied (by the policy, a person, or the session's end); the agent got `message`. */
  z.object({
    ...base,
    type: z.literal("approval_denied"),
    request_id: z.string(),
    kind: ApprovalKindSchema,
    summary: z.string(),
    by: ApprovalDeciderSchema,
    message: z.string(),
    answered_by: z.string().optional(),
  }),
  /** Nobody answered an approval request by its deadline: the agent was denied. */
  z.object({
    ...base,
    type: z.literal("approval_expired"),
    request_id: z.string(),
    kind: ApprovalKindSchema,
    summary: z.string(),
    message: z.string(),
  }),
  /** The session's project reached its disk bound on its host; its agents are stopped (`session_ended` follows). */
  z.object({
    ...base,
    type: z.literal("disk_limit"),
    used_mb: z.number().int(),
    limit_mb: z.number().int(),
    message: z.string(),
  }),
  /** A branch of the session's workspace was pushed to the project's remote (by its agent, or with `workspace push`). */
  z.object({
    ...base,
    type: z.literal("git_pushed"),
    branch: z.string(),
    commit: z.string(),
    outcome: PushOutcomeSchema,
    remote_url: z.string(),
    by: z.enum(["agent", "caller"]),
  }),
  /** A pull (merge) request was opened for a branch of the session's workspace (`workspace pull_request`). */
  z.object({
    ...base,
    type: z.literal("pull_request_opened"),
    url: z.string(),
    number: z.number().int(),
    head: z.string(),
    base: z.string(),
    title: z.string(),
  }),
  /**
   * The session's project moved to another host for this session: its host drains, or the caller
   * asked to relocate from a host that is away. Its workspaces stayed on the old host; here the
   * workspace starts afresh (`empty`), or cloned from the project's remote (`from_remote`).
   */
  z.object({
    ...base,
    type: z.literal("project_moved"),
    from_host: z.string(),
    to_host: z.string(),
    reason: z.enum(["draining", "relocated"]),
    workspace: z.enum(["empty", "from_remote"]),
    message: z.string(),
  }),
  /**
   * The host's egress gate refused a connection of the session's agent (or of a command it
   * ran): where it went, how, and why — the rule or reason that refused it. An audit entry too.
   */
  NetworkBlockedSchema.extend({ ...base, type: z.literal("network_blocked") }),
  /** The workspace's setup, run before this session's agent started: its steps, their output, how it ended. */
  ...SetupEventSchema.options.map((schema) => schema.extend(base)),
  /** A job this session's droid started, or one acting on this session (see job-events.ts). */
  ...JobEventBodySchemas.map((schema) => schema.extend(base)),
]);
export type SessionEvent = z.infer<typeof SessionEventSchema>;
export type SessionEventType = SessionEvent["type"];

/** MCP logger names used for `notifications/message`. */
export const McpLogger = {
  session: "oubliette.session",
  callerTool: "oubliette.caller_tool",
  job: "oubliette.job",
  approval: "oubliette.approval",
} as const;

/** Events about caller tool requests: they go to the caller whatever its log level. */
export function isCallerToolEvent(event: SessionEvent): boolean {
  return event.type === "caller_tool_request" || event.type === "caller_tool_failed";
}

/** Events about approval requests: like caller tool requests, they go out whatever the log level. */
export function isApprovalEvent(event: SessionEvent): boolean {
  return event.type.startsWith("approval_");
}

/** Events a caller must see to answer what waits for it, whatever its log level. */
export function alwaysDelivered(event: SessionEvent): boolean {
  return isCallerToolEvent(event) || isApprovalEvent(event);
}

/** Which MCP logger carries an event. */
export function loggerFor(event: SessionEvent): string {
  if (isCallerToolEvent(event)) return McpLogger.callerTool;
  if (isApprovalEvent(event)) return McpLogger.approval;
  return isJobEventType(event.type) ? McpLogger.job : McpLogger.session;
}

/** The git events a workspace action reports to the sessions working in it. */
export type GitEvent =
  Extract<SessionEvent, { type: "git_pushed" | "pull_request_opened" }> extends infer E
    ? E extends SessionEvent
      ? Omit<E, "session_id" | "index" | "ts">
      : never
    : never;
