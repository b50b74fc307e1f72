import { z } from "zod";
import { AgentEventBatchSchema } from "./agent-events.js";
import { AgentRuntimeSchema } from "./agent-runtimes.js";
import { ApprovalDecisionSchema, ApprovalIdSchema, ApprovalRequestSchema } from "./approvals.js";
import { CallerToolsConfigSchema, CallIdSchema } from "./caller-tools.js";
import { ProjectIdSchema, SessionIdSchema, WorkspaceIdSchema } from "./ids.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";
import { Limits } from "./limits.js";
import { NetworkPolicySchema } from "./network.js";
import { NetworkBlockedSchema, NetworkUsageSchema } from "./network-activity.js";
import {
  OublietteCallParamsSchema,
  OublietteCallResultSchema,
  OublietteToolsParamsSchema,
  OublietteToolsResultSchema,
  SessionEventsReadParamsSchema,
  SessionEventsReadResultSchema,
  SessionMessageParamsSchema,
  SessionMessageResultSchema,
} from "./oubliette-tools.js";
import { EnvSchema, ProjectSpecSchema } from "./project.js";
import { defineNotification, defineRequest, EmptyResultSchema, methodNames } from "./rpc/method.js";
import { SetupEventSchema, SetupSpecSchema } from "./setup.js";
import { GitMethods, GitPushedParamsSchema, SessionGitSchema } from "./tunnel-git.js";
import { HostProjectSchema, ProjectMethods } from "./tunnel-projects.js";
import { UsageTotalsSchema } from "./usage.js";

/**
 * The tunnel: WebSockets the host-agent opens OUT to the Worker, carrying JSON-RPC 2.0
 * (`protocol/rpc/messages.ts`), one message per text frame of at most `Limits.frameBytes`.
 * - the host channel (`/v1/tunnel/host`) to the HostRegistry Durable Object: registration,
 *   reconciliation, project containers and workspaces (`tunnel-projects.ts`), session start/stop;
 * - one session channel per running session (`/v1/tunnel/sessions/:id`) to that session's
 *   Durable Object: caller tool calls, messages to the droid, agent events.
 * Heartbeats are the bare text frames "ping" / "pong" (answered without waking the object).
 */
export const TUNNEL_PROTOCOL_VERSION = 3;
export const HEARTBEAT_PING = "ping";
export const HEARTBEAT_PONG = "pong";

/** `data.reason` of tunnel errors (code ServerError). */
export const TunnelFailureSchema = z.enum([
  "unsupported_version",
  "session_not_found",
  "session_ended",
  /** The session is not placed on the host that opened this tunnel. */
  "not_placed",
  "no_host",
  "host_full",
  "host_error",
  "image_not_found",
  "runtime_error",
  "timeout",
  /** The project (or workspace) is in use: a session of it runs. */
  "busy",
  /** No such project, workspace or path on this host. */
  "not_found",
  /** The request makes no sense here (the default workspace, a path out of its workspace). */
  "invalid",
  /** The project's container does not run. */
  "not_running",
  /** This host cannot do what was asked (workspace isolation without root, under the process runtime). */
  "unsupported",
  /** A command the host ran for the request (git, an exec) failed. */
  "exec_failed",
  /** The project is at its disk bound: it starts nothing more until space is freed. */
  "disk_limit",
  /** A remote refused what was sent (a push that is not a fast-forward, a protected branch). */
  "rejected",
  /** The workspace's setup failed: its sessions are refused until it succeeds (`workspace setup`). */
  "setup_failed",
]);
export type TunnelFailure = z.infer<typeof TunnelFailureSchema>;

export const RuntimeKindSchema = z.enum(["docker", "process"]);
export type RuntimeKind = z.infer<typeof RuntimeKindSchema>;

/** Most network policies of its own a session carries (its ancestors' and its own). */
export const MAX_SESSION_POLICIES = 8;

/** What a session adds to its project: environment for its agent. (`image` is the project's now; see session_start.) */
export const SessionSpecSchema = z.object({
  image: z.string().max(256).optional(),
  env: EnvSchema.optional(),
  /** The agent to run (default: the scripted droid) and the session's model budget. */
  agent: z
    .object({
      runtime: AgentRuntimeSchema,
      model: z.string().min(1).max(256).optional(),
      max_cost_usd: z.number().positive().optional(),
      /** Whether the agent runs so that it asks (the session's approval policy is not `auto`). */
      approvals: z.enum(["auto", "ask"]).optional(),
    })
    .optional(),
  /**
   * The session's own network policies (its parent session's, its spawn's), applied with its
   * project's: every one must allow a connection, so a session is never looser than its project.
   */
  network: z.array(NetworkPolicySchema).max(MAX_SESSION_POLICIES).optional(),
});
export type SessionSpec = z.infer<typeof SessionSpecSchema>;

// ---------------------------------------------------------------- host channel

/** How a host bounds its projects' disk use, and the bound of a project that names none. */
export const HostDiskSchema = z.object({
  mode: z.enum(["filesystem", "measured"]),
  default_mb: z.number().int().positive(),
});
export type HostDisk = z.infer<typeof HostDiskSchema>;

/** `host_hello` (host → registry): the first request after every (re)connect. */
export const HostHelloParamsSchema = z.object({
  v: z.number().int(),
  host_id: z.string().min(1).max(128),
  runtime: RuntimeKindSchema,
  agent_version: z.string().max(64),
  /** Sessions this host runs right now; the registry reconciles its placements against them. */
  sessions: z.array(SessionIdSchema).max(10_000),
  /** Project containers (and volumes) this host has; `running` when the container runs. */
  projects: z.array(HostProjectSchema).max(10_000).default([]),
  max_sessions: z.number().int().positive(),
  disk: HostDiskSchema.optional(),
});
export const HostHelloResultSchema = z.object({ host_id: z.string() });

/**
 * `session_start` (registry → host): ensure the project's container (as `project_ensure`), then
 * start the session's agent in it, working in `/workspace/<workspace_id>`.
 * A registry of protocol 2 names no project: such a session gets a project of its own (its id
 * derived from the session's), removed with the session, which is what v2 hosts did.
 */
export const SessionStartParamsSchema = z.object({
  session_id: SessionIdSchema,
  project_id: ProjectIdSchema.optional(),
  workspace_id: WorkspaceIdSchema.default("default"),
  project: ProjectSpecSchema.optional(),
  spec: SessionSpecSchema,
  /** The project's remote: the agent's own `git push` goes there, through the host. */
  git: SessionGitSchema.optional(),
  /** The project's setup: run in the workspace before the agent starts, unless it already ran. */
  setup: SetupSpecSchema.optional(),
});
export type SessionStartParams = z.infer<typeof SessionStartParamsSchema>;

/** `session_stop` (registry → host): stop the session's agent; the project's container stays (idempotent). */
export const SessionStopParamsSchema = z.object({
  session_id: z.string().max(64),
  reason: z.string().max(1024),
});

// ---------------------------------------------------------------- session channel

/**
 * A session's network, as its object knows it (`session_hello`'s answer): its own policy (the
 * project's comes with the project's spec) and whether a host not listed is put to a person.
 */
export const SessionNetworkSchema = z.object({
  session: z.array(NetworkPolicySchema).max(MAX_SESSION_POLICIES),
  approvals: z.enum(["auto", "ask"]),
});
export type SessionNetwork = z.infer<typeof SessionNetworkSchema>;

/** `session_hello` (host → session): the first request after every (re)connect. */
export const SessionHelloParamsSchema = z.object({
  v: z.number().int(),
  host_id: z.string().min(1).max(128),
});
export const SessionHelloResultSchema = z.object({
  session_id: z.string(),
  /** Highest agent event seq stored; the host-agent tells the runner, which drops them. */
  stored_event_seq: z.number().int().nonnegative(),
  config: CallerToolsConfigSchema,
  /** The usage stored so far and the session's budget, so a restarted host-agent meters on from them. */
  usage: UsageTotalsSchema.optional(),
  max_cost_usd: z.number().nonnegative().optional(),
  /** The session's network, so a restarted host-agent's gate knows it again. */
  network: SessionNetworkSchema.optional(),
});

/**
 * `caller_tool` (host → session): one call of the droid. The request id IS the call id, so the
 * session object can answer it whenever the outcome is decided (even after hibernating), and a
 * host that re-sends it after a reconnect gets the same request, never a second one.
 */
export const TunnelCallerToolParamsSchema = z.object({
  call_id: CallIdSchema,
  tool: z.string().min(1).max(64),
  arguments: JsonObjectSchema,
});
/** The caller's result, verbatim (a failed call is an error whose `data.reason` says why). */
export const TunnelCallerToolResultSchema = JsonValueSchema;

/**
 * `approval` (host → session): an agent asks permission. The request id IS the approval id, so
 * the session object answers whenever the decision is made (even after hibernating), and a host
 * that re-sends it after a reconnect gets the same request, never a second one.
 */
export const TunnelApprovalParamsSchema = z.object({
  approval_id: ApprovalIdSchema,
  agent: AgentRuntimeSchema,
  request: ApprovalRequestSchema,
});

/** `session_events` (host → session): agent events, idempotent by their `seq`. */
export const SessionEventsParamsSchema = AgentEventBatchSchema;
export const SessionEventsResultSchema = z.object({ stored_seq: z.number().int().nonnegative() });

/**
 * What the host saw that a session's subscribers should see as an event of its own before the
 * session ends (`session_end`'s `notice`): the project reached its disk bound.
 */
export const HostNoticeSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("disk_limit"),
    used_mb: z.number().int().nonnegative(),
    limit_mb: z.number().int().nonnegative(),
    message: z.string().max(1024),
  }),
]);
export type HostNotice = z.infer<typeof HostNoticeSchema>;

/** `session_end` (host → session): the session is over on the host (its container died, say). */
export const SessionEndParamsSchema = z.object({
  reason: z.string().max(1024),
  notice: HostNoticeSchema.optional(),
});

/** `droid_message` (session → host): a message for the droid; the request id is `msg:<seq>`. */
export const DroidMessageParamsSchema = z.object({
  seq: z.number().int().positive(),
  text: z.string().max(Limits.messageBytes),
});

/** `droid_interrupt` (session → host, notification): interrupt the droid's turn in flight; the session stays. */
export const DroidInterruptParamsSchema = z.object({}).optional();

/**
 * `session_usage` (host → session, notification): the session's model usage so far, as the host's
 * model proxy metered it. Totals, not increments, so a lost or repeated report costs nothing;
 * the session object keeps the highest. `refused` is set when the proxy refused a model request
 * because the budget is spent.
 */
export const SessionUsageParamsSchema = UsageTotalsSchema.extend({
  refused: z.string().max(1024).optional(),
});
export type SessionUsageParams = z.infer<typeof SessionUsageParamsSchema>;

/**
 * `network_blocked` (host → session): the host's gate refused a connection of the session's
 * agent. Re-sent under its `blocked_id` after every reconnect until acknowledged; the session
 * object records each id once (an event and an audit entry).
 */
export const NetworkBlockedParamsSchema = NetworkBlockedSchema.extend({
  blocked_id: z.string().regex(/^nb_[A-Za-z0-9_-]{8,64}$/),
});

/** `network_usage` (host → session, notification): the hosts the session reached, as totals. */
export const NetworkUsageParamsSchema = NetworkUsageSchema;

/** `setup_event` (host → session, notification): the workspace's setup, as it runs before the agent starts. */
export const SetupEventParamsSchema = SetupEventSchema;

/** `caller_tools_config` (session → host, notification): on every re-declaration (the hello result carries the first). */
export const TunnelCallerToolsConfigSchema = CallerToolsConfigSchema;

/**
 * Every method of the tunnel, with its schemas. Host channel: `host_hello` (host → registry),
 * the session and project requests (registry → host). Session tunnel: the rest (their comments
 * above say which way).
 */
export const TunnelMethods = {
  hostHello: defineRequest("host_hello", { params: HostHelloParamsSchema, result: HostHelloResultSchema }),
  sessionStart: defineRequest("session_start", {
    params: SessionStartParamsSchema,
    result: EmptyResultSchema,
  }),
  sessionStop: defineRequest("session_stop", { params: SessionStopParamsSchema, result: EmptyResultSchema }),
  ...ProjectMethods,
  ...GitMethods,
  sessionHello: defineRequest("session_hello", {
    params: SessionHelloParamsSchema,
    result: SessionHelloResultSchema,
  }),
  callerTool: defineRequest("caller_tool", {
    params: TunnelCallerToolParamsSchema,
    result: TunnelCallerToolResultSchema,
  }),
  approval: defineRequest("approval", {
    params: TunnelApprovalParamsSchema,
    result: ApprovalDecisionSchema,
  }),
  sessionEvents: defineRequest("session_events", {
    params: SessionEventsParamsSchema,
    result: SessionEventsResultSchema,
  }),
  sessionEnd: defineRequest("session_end", { params: SessionEndParamsSchema, result: EmptyResultSchema }),
  callerToolsConfig: defineNotification("caller_tools_config", { params: TunnelCallerToolsConfigSchema }),
  droidMessage: defineRequest("droid_message", {
    params: DroidMessageParamsSchema,
    result: EmptyResultSchema,
  }),
  droidInterrupt: defineNotification("droid_interrupt", { params: DroidInterruptParamsSchema }),
  sessionUsage: defineNotification("session_usage", { params: SessionUsageParamsSchema }),
  gitPushed: defineRequest("git_pushed", { params: GitPushedParamsSchema, result: EmptyResultSchema }),
  networkBlocked: defineRequest("network_blocked", {
    params: NetworkBlockedParamsSchema,
    result: EmptyResultSchema,
  }),
  networkUsage: defineNotification("network_usage", { params: NetworkUsageParamsSchema }),
  setupEvent: defineNotification("setup_event", { params: SetupEventParamsSchema }),
  oublietteTools: defineRequest("oubliette_tools", {
    params: OublietteToolsParamsSchema,
    result: OublietteToolsResultSchema,
  }),
  oublietteCall: defineRequest("oubliette_call_tool", {
    params: OublietteCallParamsSchema,
    result: OublietteCallResultSchema,
  }),
  childMessage: defineRequest("session_message", {
    params: SessionMessageParamsSchema,
    result: SessionMessageResultSchema,
  }),
  ownEvents: defineRequest("session_events_read", {
    params: SessionEventsReadParamsSchema,
    result: SessionEventsReadResultSchema,
  }),
} as const;

/** The tunnel's method names, by key (derived from `TunnelMethods`). */
export const TunnelMethod = methodNames(TunnelMethods);

/** The request id of droid message `seq` (deterministic, so answers need no pending map). */
export function droidMessageId(seq: number): string {
  return `msg:${seq}`;
}
