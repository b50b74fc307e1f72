import { z } from "zod";
import { CallerToolFailureSchema, CallerToolsConfigSchema } from "./caller-tools.js";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";

/**
 * The container socket: JSON-RPC 2.0, one message per line (UTF-8, '\n' terminated), between the
 * container-client (inside the container) and the host-agent (on the host).
 */
export const SOCKET_PROTOCOL_VERSION = 1;

/** Default cap on one line; a longer line gets a JSON-RPC error and is discarded. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/** Default path of the socket inside the container (a per-session host directory is mounted at /mcp). */
export const DEFAULT_SOCKET_PATH = "/mcp/relay.sock";

/** Environment variables the host-agent hands to the agent process. */
export const AgentEnv = {
  socketPath: "OUBLIETTE_SOCKET",
  sessionToken: "OUBLIETTE_SESSION_TOKEN",
  sessionId: "OUBLIETTE_SESSION_ID",
} as const;

export const JsonRpcIdSchema = z.union([z.string().max(256), z.number().int()]);
export type JsonRpcId = z.infer<typeof JsonRpcIdSchema>;

export const JsonRpcRequestSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcIdSchema,
  method: z.string().min(1).max(256),
  params: z.unknown().optional(),
});
export type JsonRpcRequest = z.infer<typeof JsonRpcRequestSchema>;

export const JsonRpcNotificationSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string().min(1).max(256),
  params: z.unknown().optional(),
});
export type JsonRpcNotification = z.infer<typeof JsonRpcNotificationSchema>;

export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

export const JsonRpcSuccessSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcIdSchema,
  result: z.unknown(),
});
export const JsonRpcFailureSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcIdSchema.nullable(),
  error: JsonRpcErrorObjectSchema,
});
export const JsonRpcResponseSchema = z.union([JsonRpcSuccessSchema, JsonRpcFailureSchema]);
export type JsonRpcResponse = z.infer<typeof JsonRpcResponseSchema>;

// ---- methods the container-client calls on the host-agent ----

/** `hello`: must be the first request on a connection; binds it to the session that owns the token. */
export const HelloParamsSchema = z.object({
  session_token: z.string().min(1).max(512),
  client: z.object({ name: z.string().max(128), version: z.string().max(64) }).optional(),
});
export const HelloResultSchema = z.object({
  session_id: z.string(),
  protocol_version: z.number().int(),
});

/** `caller_tool`: run a caller tool; the result is the caller's result, verbatim. */
export const CallerToolParamsSchema = z.object({
  tool: z.string().min(1).max(64),
  arguments: JsonObjectSchema.default({}),
});
export const CallerToolResultSchema = JsonValueSchema;

/** `data` of the JSON-RPC error (code -32000) when a caller tool call fails. */
export const CallerToolErrorDataSchema = z.object({ reason: CallerToolFailureSchema });

/** `ping`: liveness check, answered with `{}`. */
export const PingParamsSchema = z.object({}).optional();

export const SocketMethod = {
  hello: "hello",
  callerTool: "caller_tool",
  ping: "ping",
} as const;

// ---- notifications the host-agent sends to the container-client ----

/** `caller_tools_config`: sent after `hello` and whenever the caller re-declares its tools. */
export const CallerToolsConfigNotificationSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.literal("caller_tools_config"),
  params: CallerToolsConfigSchema,
});

/** The seed form of the same notification (`type` instead of `method`); accepted, never sent. */
export const LegacyCallerToolsConfigSchema = z.object({
  type: z.literal("caller_tools_config"),
  params: CallerToolsConfigSchema,
});
