import { z } from "zod";
import { CallerToolOutcomeSchema, CallerToolsConfigSchema } from "./caller-tools.js";
import { DroidStatusSchema } from "./events.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";

/**
 * The tunnel: WebSockets the host-agent opens OUT to the Worker. Two kinds:
 * - the host channel (`/v1/tunnel/host`) to the HostRegistry Durable Object: placement and
 *   container lifecycle;
 * - one session channel per running session (`/v1/tunnel/sessions/:id`) to that session's
 *   Durable Object: caller tool calls, messages to the droid, droid events.
 * Every frame is one JSON object with a `type`; the hello frames carry the protocol version `v`.
 * Heartbeats are the bare text frames "ping" / "pong" (answered without waking the object).
 */
export const TUNNEL_PROTOCOL_VERSION = 1;
export const HEARTBEAT_PING = "ping";
export const HEARTBEAT_PONG = "pong";
/** Largest tunnel frame either side accepts. */
export const MAX_TUNNEL_FRAME_BYTES = 1024 * 1024;

export const TunnelErrorCodeSchema = z.enum([
  "bad_frame",
  "unsupported_version",
  "unauthorized",
  "session_not_found",
  "session_ended",
  "no_host",
  "runtime_error",
  "timeout",
  "internal",
]);
export type TunnelErrorCode = z.infer<typeof TunnelErrorCodeSchema>;

export const TunnelErrorSchema = z.object({ code: TunnelErrorCodeSchema, message: z.string() });
export type TunnelError = z.infer<typeof TunnelErrorSchema>;

/** Either side may answer a frame it cannot use with this; the connection stays up. */
const ErrorFrame = z.object({
  type: z.literal("error"),
  error: TunnelErrorSchema,
  ref: z.string().optional(),
});

// ---------------------------------------------------------------- host channel

export const RuntimeKindSchema = z.enum(["docker", "process"]);
export type RuntimeKind = z.infer<typeof RuntimeKindSchema>;

export const SessionSpecSchema = z.object({
  image: z.string().optional(),
  env: z.record(z.string().regex(/^[A-Z_][A-Z0-9_]*$/), z.string()).optional(),
});
export type SessionSpec = z.infer<typeof SessionSpecSchema>;

export const HostToRegistrySchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("host_hello"),
    v: z.number().int(),
    host_id: z.string().min(1).max(128),
    runtime: RuntimeKindSchema,
    agent_version: z.string(),
    /** Sessions this host is running right now (after a reconnect). */
    sessions: z.array(z.string()),
    max_sessions: z.number().int().positive(),
  }),
  z.object({
    type: z.literal("ack"),
    req_id: z.string(),
    ok: z.boolean(),
    error: TunnelErrorSchema.optional(),
  }),
  ErrorFrame,
]);
export type HostToRegistry = z.infer<typeof HostToRegistrySchema>;

export const RegistryToHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("host_welcome"), v: z.number().int(), host_id: z.string() }),
  z.object({
    type: z.literal("session_start"),
    req_id: z.string(),
    session_id: z.string(),
    spec: SessionSpecSchema,
  }),
  z.object({
    type: z.literal("session_stop"),
    req_id: z.string(),
    session_id: z.string(),
    reason: z.string(),
  }),
  ErrorFrame,
]);
export type RegistryToHost = z.infer<typeof RegistryToHostSchema>;

// ---------------------------------------------------------------- session channel

/** Something the host saw happen to the droid; the session object turns it into a session event. */
export const HostSessionEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("droid_status"),
    status: DroidStatusSchema,
    exit_code: z.number().int().nullable().optional(),
    message: z.string().optional(),
  }),
  z.object({
    type: z.literal("droid_output"),
    data: JsonValueSchema.optional(),
    text: z.string().optional(),
  }),
  z.object({ type: z.literal("droid_log"), text: z.string() }),
]);
export type HostSessionEvent = z.infer<typeof HostSessionEventSchema>;

export const HostToSessionSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("session_hello"),
    v: z.number().int(),
    host_id: z.string(),
    /** Highest droid message seq the host has delivered; later ones are re-sent. */
    delivered_message_seq: z.number().int().nonnegative(),
  }),
  /** Idempotent by `call_id`: re-sent after a reconnect until a result arrives. */
  z.object({
    type: z.literal("caller_tool_call"),
    call_id: z.string().min(1).max(128),
    tool: z.string().min(1).max(64),
    arguments: JsonObjectSchema,
  }),
  z.object({ type: z.literal("droid_message_ack"), seq: z.number().int().nonnegative() }),
  /** Idempotent by `seq`: the object keeps the highest seq it stored. */
  z.object({
    type: z.literal("session_events"),
    seq: z.number().int().positive(),
    events: z.array(HostSessionEventSchema).min(1).max(256),
  }),
  ErrorFrame,
]);
export type HostToSession = z.infer<typeof HostToSessionSchema>;

export const SessionToHostSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("session_welcome"),
    v: z.number().int(),
    session_id: z.string(),
    /** Highest host event seq stored; the host drops everything up to it from its resend queue. */
    stored_event_seq: z.number().int().nonnegative(),
  }),
  z.object({ type: z.literal("caller_tools_config"), config: CallerToolsConfigSchema }),
  z.object({ type: z.literal("caller_tool_result"), call_id: z.string(), outcome: CallerToolOutcomeSchema }),
  z.object({ type: z.literal("droid_message"), seq: z.number().int().positive(), text: z.string() }),
  z.object({ type: z.literal("session_events_ack"), seq: z.number().int().nonnegative() }),
  ErrorFrame,
]);
export type SessionToHost = z.infer<typeof SessionToHostSchema>;

/** Message line the host-agent writes to the agent process's stdin for each droid message. */
export const AgentStdinMessageSchema = z.object({
  type: z.literal("message"),
  seq: z.number().int(),
  text: z.string(),
});
export type AgentStdinMessage = z.infer<typeof AgentStdinMessageSchema>;
