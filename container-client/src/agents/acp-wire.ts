/**
 * The parts of the Agent Client Protocol (v1) the ACP driver reads, as OpenCode and Gemini CLI
 * send them. Parsed loosely: agents add fields of their own (`_meta`, `messageId`, `usage`).
 */
import { z } from "zod";
import { JsonValueSchema } from "../../../protocol/json.js";

/** Result of `initialize` (only who the agent is, for the start-up event). */
export const InitializeResultSchema = z.object({
  agentInfo: z.object({ name: z.string(), version: z.string().optional() }).optional(),
  /** `loadSession`: the agent can take up a session it kept (`session/load`). */
  agentCapabilities: z.looseObject({ loadSession: z.boolean().optional() }).optional(),
});

/** Result of `session/new`. */
export const NewSessionResultSchema = z.object({ sessionId: z.string() });

/** Result of `session/prompt`: the turn is over. */
export const PromptResultSchema = z.object({ stopReason: z.string() });

/** A `ContentBlock`; only text is read. */
const ContentBlockSchema = z.object({ type: z.string(), text: z.string().optional() }).loose();

/** What a tool call carries: content blocks, diffs (`path`) or terminals (`terminalId`). */
export const ToolCallContentSchema = z
  .object({
    type: z.string(),
    content: ContentBlockSchema.optional(),
    path: z.string().optional(),
    terminalId: z.string().optional(),
  })
  .loose();
export type ToolCallContent = z.infer<typeof ToolCallContentSchema>;

/** `tool_call` and `tool_call_update` alike: an update only carries what changed. */
export const ToolCallUpdateSchema = z.object({
  toolCallId: z.string(),
  title: z.string().nullish(),
  kind: z.string().nullish(),
  status: z.string().nullish(),
  rawInput: JsonValueSchema.optional(),
  rawOutput: JsonValueSchema.optional(),
  content: z.array(ToolCallContentSchema).nullish(),
});
export type ToolCallUpdate = z.infer<typeof ToolCallUpdateSchema>;

/** `session/update` notification params: the update, told apart by `sessionUpdate`. */
export const SessionUpdateSchema = z.object({
  sessionId: z.string(),
  update: z.object({ sessionUpdate: z.string() }).loose(),
});

/** `agent_message_chunk`; OpenCode names the message each chunk belongs to, Gemini does not. */
export const MessageChunkSchema = z.object({
  content: ContentBlockSchema,
  messageId: z.string().nullish(),
});

/** `session/request_permission`: the options to pick from, and the tool call it is about. */
export const PermissionRequestSchema = z.object({
  options: z.array(z.object({ optionId: z.string(), name: z.string().optional(), kind: z.string() })),
  toolCall: z.object({ title: z.string().nullish() }).loose().optional(),
});
