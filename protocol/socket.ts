import { z } from "zod";
import { AgentEventBatchSchema, AgentStateSchema } from "./agent-events.js";
import { CallerToolsConfigSchema, CallIdSchema } from "./caller-tools.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";
import { Limits } from "./limits.js";

/**
 * The container socket: JSON-RPC 2.0 (`protocol/rpc/messages.ts`), one message per line (UTF-8,
 * '\n' terminated, at most `Limits.lineBytes`), between the host-agent (which serves it) and two
 * kinds of peers inside the container: the runner (the container's main process, which owns the
 * agent's stdio) and the container-client (the droid's MCP server). Both authenticate with
 * `hello` and the session's secret.
 */
export const SOCKET_PROTOCOL_VERSION = 2;

/** Default path of the socket inside the container (a per-session host directory is mounted at /mcp). */
export const DEFAULT_SOCKET_PATH = "/mcp/relay.sock";

/** Environment variables the host-agent hands to the container (runner and agent). */
export const AgentEnv = {
  socketPath: "OUBLIETTE_SOCKET",
  sessionToken: "OUBLIETTE_SESSION_TOKEN",
  sessionId: "OUBLIETTE_SESSION_ID",
  /** The agent program the runner starts, as a JSON array (set by the image, or the host-agent). */
  agentCommand: "OUBLIETTE_AGENT_COMMAND",
  /** Set to 1 when the runner must end with its parent (the process runtime: no re-adoption). */
  exitWithParent: "OUBLIETTE_RUNNER_EXIT_WITH_PARENT",
} as const;

export const SocketMethod = {
  hello: "hello",
  ping: "ping",
  callerTool: "caller_tool",
  callerToolsConfig: "caller_tools_config",
  agentStart: "agent_start",
  agentMessage: "agent_message",
  agentStop: "agent_stop",
  agentEvents: "agent_events",
  agentEventsAck: "agent_events_ack",
} as const;

// ---- requests to the host-agent ----

/** `hello`: the first request on every connection; binds it to the session that owns the token. */
export const HelloParamsSchema = z.object({
  session_token: z.string().min(1).max(512),
  /** `runner` for the container's main process; `client` (default) for the droid's MCP server. */
  role: z.enum(["client", "runner"]).default("client"),
  client: z.object({ name: z.string().max(128), version: z.string().max(64) }).optional(),
  /** The runner's agent, reported on every (re)connect. */
  agent: AgentStateSchema.optional(),
});
export type HelloParams = z.input<typeof HelloParamsSchema>;
export const HelloResultSchema = z.object({
  session_id: z.string(),
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

/** `agent_events` (runner → host-agent, notification): new or re-sent agent events. */
export const AgentEventsParamsSchema = AgentEventBatchSchema;

// ---- requests to the runner ----

/** `agent_start`: start the session's agent (only when the runner reported it `idle`). */
export const AgentStartParamsSchema = z.object({}).optional();
export const AgentStartResultSchema = z.object({ pid: z.number().int() });

/** `agent_message`: write a droid message to the agent's stdin (idempotent by `seq`). */
export const AgentMessageParamsSchema = z.object({
  seq: z.number().int().positive(),
  text: z.string().max(Limits.messageBytes),
});
export const AgentMessageResultSchema = z.object({ delivered_seq: z.number().int().nonnegative() });

/** `agent_stop`: end the agent (stdin end, SIGTERM, SIGKILL after `grace_ms`); answers once it exited. */
export const AgentStopParamsSchema = z.object({
  reason: z.string().max(1024),
  grace_ms: z.number().int().min(0).max(120_000).default(5_000),
});
export const AgentStopResultSchema = z.object({
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
});

/** `agent_events_ack` (host-agent → runner, notification): events up to `seq` are stored. */
export const AgentEventsAckParamsSchema = z.object({ seq: z.number().int().nonnegative() });

/** `caller_tools_config` (host-agent → container-client, notification): after hello and on every re-declaration. */
export const CallerToolsConfigParamsSchema = CallerToolsConfigSchema;

/** The seed's form of the config notification (`type` instead of `method`); accepted, never sent. */
export const LegacyCallerToolsConfigSchema = z.object({
  type: z.literal("caller_tools_config"),
  params: CallerToolsConfigSchema,
});
