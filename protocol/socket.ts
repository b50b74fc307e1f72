import { z } from "zod";
import { AgentEventBatchSchema, AgentStateSchema } from "./agent-events.js";
import { AgentRuntimeSchema } from "./agent-runtimes.js";
import { ApprovalDecisionSchema, ApprovalIdSchema, ApprovalRequestSchema } from "./approvals.js";
import { CallerToolsConfigSchema, CallIdSchema } from "./caller-tools.js";
import { ContainerPaths, runnerSocketPath } from "./container-layout.js";
import { SessionIdSchema } from "./ids.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";
import { Limits } from "./limits.js";
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
import { defineNotification, defineRequest, EmptyResultSchema, methodNames } from "./rpc/method.js";
import {
  GitFetchParamsSchema,
  GitFetchReadParamsSchema,
  GitFetchReadResultSchema,
  GitFetchResultSchema,
  GitListParamsSchema,
  GitListResultSchema,
  GitPushParamsSchema,
  GitPushResultSchema,
} from "./tunnel-git.js";

/**
 * The container sockets: JSON-RPC 2.0 (`protocol/rpc/messages.ts`), one message per line (UTF-8,
 * '\n' terminated, at most `Limits.lineBytes`), between the host-agent (which serves them) and
 * two kinds of peers inside a project's container: the runner (the container's main process,
 * which owns every agent's stdio) and the container-clients (one droid MCP server per session).
 * Each has a socket of its own that only its uid can reach (`container-layout.ts`): the runner
 * presents the container's secret on its socket, a container-client its session's secret on
 * that session's socket, which binds the connection to that session.
 */
export const SOCKET_PROTOCOL_VERSION = 4;

/** The runner's socket inside a container (the project's socket directory is mounted at /mcp). */
export const DEFAULT_SOCKET_PATH = runnerSocketPath(ContainerPaths.socketDir);

/** Environment variables the host-agent (and, per agent, the runner) hands out. */
export const AgentEnv = {
  socketPath: "OUBLIETTE_SOCKET",
  /** The session's secret: the agent's container-client presents it. */
  sessionToken: "OUBLIETTE_SESSION_TOKEN",
  sessionId: "OUBLIETTE_SESSION_ID",
  /** The container's secret: only the runner presents it; never handed to an agent. */
  runnerToken: "OUBLIETTE_RUNNER_TOKEN",
  projectId: "OUBLIETTE_PROJECT_ID",
  /** The agent program the runner starts, as a JSON array (set by the image, or the host-agent). */
  agentCommand: "OUBLIETTE_AGENT_COMMAND",
  /** Set to 1 when the runner must end with its parent (the process runtime: no re-adoption). */
  exitWithParent: "OUBLIETTE_RUNNER_EXIT_WITH_PARENT",
  /** Set to 1 in a container: every agent runs as a uid of its own, never as the runner. */
  separateSessions: "OUBLIETTE_SEPARATE_SESSIONS",
} as const;

/** Variables only the runner may see: it removes them from every agent's environment. */
export const RUNNER_ONLY_ENV: readonly string[] = [
  AgentEnv.runnerToken,
  AgentEnv.agentCommand,
  AgentEnv.exitWithParent,
  AgentEnv.separateSessions,
];

/** Most agents one runner runs at once (a project's sessions on one host). */
export const MAX_AGENTS_PER_RUNNER = 256;

const SecretSchema = z.string().min(1).max(512);

/** Highest uid/gid the host hands out (below the kernel's overflow ids). */
const MAX_ID = 65_533;

/** One agent as the runner reports it in `hello`: enough for a restarted host-agent to re-adopt its session. */
export const RunnerAgentSchema = AgentStateSchema.extend({
  session_id: SessionIdSchema,
  /** The runtime the agent is (a restarted host-agent names it when it asks for the session). */
  runtime: AgentRuntimeSchema.optional(),
  session_token: SecretSchema,
  /** The agent's placeholder model credential, so a restarted host-agent meters the session again. */
  model_token: z.string().max(256).optional(),
  /** The agent's proxy credential, so a restarted host-agent's gate knows it again. */
  proxy_token: z.string().max(256).optional(),
  /** The uid and gid the agent runs as, so a restarted host-agent serves its socket to them. */
  uid: z.number().int().min(0).max(MAX_ID).optional(),
  gid: z.number().int().min(0).max(MAX_ID).optional(),
});
export type RunnerAgent = z.infer<typeof RunnerAgentSchema>;

// ---- requests to the host-agent ----

/**
 * `hello`: the first request on every connection. A container-client (`role: client`, the
 * default) presents its session's secret and is bound to that session; the runner presents the
 * container's secret and reports every agent it runs.
 */
export const HelloParamsSchema = z
  .object({
    role: z.enum(["client", "runner"]).default("client"),
    session_token: SecretSchema.optional(),
    runner_token: SecretSchema.optional(),
    client: z.object({ name: z.string().max(128), version: z.string().max(64) }).optional(),
    /** The runner's agents, reported on every (re)connect. */
    agents: z.array(RunnerAgentSchema).max(MAX_AGENTS_PER_RUNNER).optional(),
    /** The runner's loopback ports in the container: its egress proxy and its model forwarder. */
    ports: z
      .object({
        egress: z.number().int().min(1).max(65_535).optional(),
        model: z.number().int().min(1).max(65_535).optional(),
      })
      .optional(),
  })
  .refine((p) => (p.role === "runner" ? p.runner_token !== undefined : p.session_token !== undefined), {
    message: "a client hello needs session_token, a runner hello runner_token",
  });
export type HelloParams = z.input<typeof HelloParamsSchema>;
export const HelloResultSchema = z.object({
  /** The session a client connection is bound to (absent for the runner). */
  session_id: z.string().optional(),
  project_id: z.string().optional(),
  protocol_version: z.number().int(),
});

/**
 * `caller_tool`: run a caller tool; the result is the caller's result, verbatim. `call_id` is the
 * call's identity across reconnects (a call re-sent with the same id is the same call); without
 * one (the seed's form) the host-agent makes one up and the call cannot be resumed.
 */
export const CallerToolParamsSchema = z.object({
  call_id: CallIdSchema.optional(),
  tool: z.string().min(1).max(64),
  arguments: JsonObjectSchema.default({}),
});
export const CallerToolResultSchema = JsonValueSchema;

export const PingParamsSchema = z.object({}).optional();

/**
 * `approval` (runner → host-agent): an agent of session `session_id` asks permission; the
 * answer is the session's decision. `approval_id` is the request's identity across reconnects
 * (re-sent under the same id until it is decided); the agent waits meanwhile.
 */
export const ApprovalParamsSchema = z.object({
  session_id: SessionIdSchema,
  approval_id: ApprovalIdSchema,
  agent: AgentRuntimeSchema,
  request: ApprovalRequestSchema,
});
export type ApprovalParams = z.infer<typeof ApprovalParamsSchema>;

/** `agent_events` (runner → host-agent, notification): new or re-sent events of one agent. */
export const AgentEventsParamsSchema = AgentEventBatchSchema.extend({ session_id: SessionIdSchema });

// ---- requests to the runner ----

/**
 * Which agent a session runs: the runtime (its adapter and CLI), the model, and the placeholder
 * credential it presents to the model forwarder (the host-agent's proxy knows the session by it;
 * the provider key never enters the container).
 */
export const AgentLaunchSpecSchema = z.object({
  runtime: AgentRuntimeSchema,
  model: z.string().min(1).max(256).optional(),
  model_token: z.string().min(16).max(256).optional(),
  /** The credential in the agent's proxy URL (the host's gate knows the session by its uid; this must agree). */
  proxy_token: z.string().min(16).max(256).optional(),
  /**
   * `auto`: the agent acts unasked (its CLI's fully automatic mode). `ask`: it runs in the mode
   * where its own permission system asks, and the runner puts every question to the session
   * (`approval`), answering the CLI with the decision.
   */
  approvals: z.enum(["auto", "ask"]).default("auto"),
});
export type AgentLaunchSpec = z.infer<typeof AgentLaunchSpecSchema>;

/**
 * `agent_start`: start the agent of a session (idempotent: a running one answers its pid). `cwd`
 * is its working directory in the container; `uid`/`gid`, when given, the identity it runs as
 * (the session's own uid and its workspace's group; the runner needs CAP_SETUID/SETGID for it);
 * `home` the session's private home, which the host made for that uid.
 */
export const AgentStartParamsSchema = z.object({
  session_id: SessionIdSchema,
  session_token: SecretSchema,
  cwd: z.string().min(1).max(4096).startsWith("/"),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(32_768)).default({}),
  uid: z.number().int().min(1).max(MAX_ID).optional(),
  gid: z.number().int().min(1).max(MAX_ID).optional(),
  home: z.string().min(1).max(4096).startsWith("/").optional(),
  agent: AgentLaunchSpecSchema.default({ runtime: "scripted", approvals: "auto" }),
});
export type AgentStartParams = z.input<typeof AgentStartParamsSchema>;
export const AgentStartResultSchema = z.object({ pid: z.number().int() });

/** `agent_message`: write a droid message to a session's agent (idempotent by `seq`). */
export const AgentMessageParamsSchema = z.object({
  session_id: SessionIdSchema,
  seq: z.number().int().positive(),
  text: z.string().max(Limits.messageBytes),
});
export const AgentMessageResultSchema = z.object({ delivered_seq: z.number().int().nonnegative() });

/** `agent_stop`: end a session's agent (stdin end, SIGTERM, SIGKILL after `grace_ms`); answers once it exited. */
export const AgentStopParamsSchema = z.object({
  session_id: SessionIdSchema,
  reason: z.string().max(1024),
  grace_ms: z.number().int().min(0).max(120_000).default(5_000),
});
export const AgentStopResultSchema = z.object({
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
});

/** `agent_interrupt`: interrupt the turn in flight of a session's agent; the agent and session stay. */
export const AgentInterruptParamsSchema = z.object({ session_id: SessionIdSchema });
export const AgentInterruptResultSchema = z.object({ interrupted: z.boolean() });

/** `agent_events_ack` (host-agent → runner, notification): a session's events up to `seq` are stored. */
export const AgentEventsAckParamsSchema = z.object({
  session_id: SessionIdSchema,
  seq: z.number().int().nonnegative(),
});

/** `caller_tools_config` (host-agent → container-client, notification): after hello and on every re-declaration. */
export const CallerToolsConfigParamsSchema = CallerToolsConfigSchema;

/** `oubliette_tools_changed` (host-agent → container-client, notification): sent as `{}`; anything is accepted. */
export const OublietteToolsChangedParamsSchema = z.unknown();

/** The seed's form of the config notification (`type` instead of `method`); accepted, never sent. */
export const LegacyCallerToolsConfigSchema = z.object({
  type: z.literal("caller_tools_config"),
  params: CallerToolsConfigSchema,
});

/**
 * Every method of the container sockets, with its schemas: the host-agent serves the requests
 * of the container-clients and the runner; the runner serves the host-agent's `agent_*` requests.
 */
export const SocketMethods = {
  hello: defineRequest("hello", { params: HelloParamsSchema, result: HelloResultSchema }),
  /** Served on both ends: the host-agent's, and the runner's (the host-agent's liveness check of it). */
  ping: defineRequest("ping", { params: PingParamsSchema, result: EmptyResultSchema }),
  callerTool: defineRequest("caller_tool", {
    params: CallerToolParamsSchema,
    result: CallerToolResultSchema,
  }),
  callerToolsConfig: defineNotification("caller_tools_config", { params: CallerToolsConfigParamsSchema }),
  agentStart: defineRequest("agent_start", {
    params: AgentStartParamsSchema,
    result: AgentStartResultSchema,
  }),
  agentMessage: defineRequest("agent_message", {
    params: AgentMessageParamsSchema,
    result: AgentMessageResultSchema,
  }),
  agentStop: defineRequest("agent_stop", { params: AgentStopParamsSchema, result: AgentStopResultSchema }),
  agentInterrupt: defineRequest("agent_interrupt", {
    params: AgentInterruptParamsSchema,
    result: AgentInterruptResultSchema,
  }),
  approval: defineRequest("approval", { params: ApprovalParamsSchema, result: ApprovalDecisionSchema }),
  agentEvents: defineNotification("agent_events", { params: AgentEventsParamsSchema }),
  agentEventsAck: defineNotification("agent_events_ack", { params: AgentEventsAckParamsSchema }),
  oublietteTools: defineRequest("oubliette_tools", {
    params: OublietteToolsParamsSchema,
    result: OublietteToolsResultSchema,
  }),
  oublietteCallTool: defineRequest("oubliette_call_tool", {
    params: OublietteCallParamsSchema,
    result: OublietteCallResultSchema,
  }),
  sessionMessage: defineRequest("session_message", {
    params: SessionMessageParamsSchema,
    result: SessionMessageResultSchema,
  }),
  sessionEvents: defineRequest("session_events", {
    params: SessionEventsReadParamsSchema,
    result: SessionEventsReadResultSchema,
  }),
  /** git-remote-oubliette → host-agent: the project remote's branches, and a push there (docs/git.md). */
  gitList: defineRequest("git_list", { params: GitListParamsSchema, result: GitListResultSchema }),
  gitPush: defineRequest("git_push", { params: GitPushParamsSchema, result: GitPushResultSchema }),
  gitFetch: defineRequest("git_fetch", { params: GitFetchParamsSchema, result: GitFetchResultSchema }),
  gitFetchRead: defineRequest("git_fetch_read", {
    params: GitFetchReadParamsSchema,
    result: GitFetchReadResultSchema,
  }),
  /** host-agent → client notification: the key's tools may have changed; list them again. */
  oublietteToolsChanged: defineNotification("oubliette_tools_changed", {
    params: OublietteToolsChangedParamsSchema,
  }),
} as const;

/** The socket's method names, by key (derived from `SocketMethods`). */
export const SocketMethod = methodNames(SocketMethods);
