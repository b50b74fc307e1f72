import { z } from "zod";
import { JsonObjectSchema, JsonValueSchema } from "./json.js";

/**
 * Oubliette's own tools offered to a droid that holds an API key (seeds: "Exposing Oubliette
 * Tools"). The container-client asks with the key it was given (`OUBLIETTE_API_KEY`); the same
 * messages travel on the container socket (client → host-agent) and on the session tunnel
 * (host-agent → session object), where the key is checked on every call, against the same tool
 * registry and the same access check as the MCP endpoint. Errors: -32001 invalid or expired key,
 * -32002 tool (or action) not allowed for the key's scope; a tool's own failure is a result with
 * `isError: true`.
 */
export const ApiKeySchema = z.string().min(1).max(512);

/** `oubliette_tools {api_key}` → `{tools}`: the tools (names without the `oubliette_` prefix) the key may use. */
export const OublietteToolsParamsSchema = z.object({ api_key: ApiKeySchema });
export const OublietteToolSchema = z.object({
  name: z.string().min(1).max(64),
  title: z.string().max(256).optional(),
  description: z
    .string()
    .max(16 * 1024)
    .optional(),
  inputSchema: JsonObjectSchema,
});
export type OublietteTool = z.infer<typeof OublietteToolSchema>;
export const OublietteToolsResultSchema = z.object({ tools: z.array(OublietteToolSchema).max(256) });

/** `oubliette_call_tool {api_key, tool, arguments}` → an MCP `CallToolResult`. */
export const OublietteCallParamsSchema = z.object({
  api_key: ApiKeySchema,
  tool: z.string().min(1).max(64),
  arguments: JsonObjectSchema.default({}),
});
export const OublietteCallResultSchema = z
  .object({
    content: z.array(JsonValueSchema),
    structuredContent: JsonObjectSchema.optional(),
    isError: z.boolean().optional(),
  })
  .passthrough();

/** The prefix droids see Oubliette's tools under (`oubliette_project`, `oubliette_session`, …). */
export const OUBLIETTE_TOOL_PREFIX = "oubliette_";

/** The environment variable holding the droid's API key. */
export const API_KEY_ENV = "OUBLIETTE_API_KEY";

/**
 * `session_message {message, workspace_id?, create_workspace?}` (client → host-agent → session
 * object): the droid starts a child session with a first message — the same path as
 * `oubliette_session spawn`, with the session's own authority (its project, write), bounded by the
 * project's max_recursion_depth and max_agents_per_session. Answers the child's session info.
 */
export const SessionMessageParamsSchema = z.object({
  message: z
    .string()
    .min(1)
    .max(256 * 1024),
  workspace_id: z.string().max(64).optional(),
  create_workspace: z.boolean().optional(),
});
/** The child's session info, as the session object answers it (passed on verbatim). */
export const SessionMessageResultSchema = JsonValueSchema;

/**
 * `session_events {since_index?, limit?, include_children?, children_since?}` (client → host-agent
 * → session object): the droid reads its own session's events, merged with its children's.
 */
export const SessionEventsReadParamsSchema = z.object({
  since_index: z.number().int().nonnegative().default(0),
  limit: z.number().int().min(1).max(1000).default(100),
  include_children: z.boolean().default(true),
  children_since: z.record(z.string().max(64), z.number().int().nonnegative()).default({}),
});
/** A page of events, as the session object answers it (passed on verbatim). */
export const SessionEventsReadResultSchema = JsonValueSchema;
