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

/** One answer a permission request offers, told apart by `kind` (`allow_once`, `reject_once`, …). */
const PermissionOptionSchema = z.object({
  optionId: z.string(),
  name: z.string().optional(),
  kind: z.string(),
});
export type PermissionOption = z.infer<typeof PermissionOptionSchema>;

/** `session/request_permission`: the options to pick from, and the tool call it is about. */
export const PermissionRequestSchema = z.object({
  options: z.array(PermissionOptionSchema),
  toolCall: z.object({ title: z.string().nullish() }).loose().optional(),
});

/**
 * The tool call a permission request is about, as a client that asks a person reads it. Its
 * content items are parsed one by one (`ToolCallContentSchema`, `DiffContentSchema`), so one odd
 * item spoils nothing else.
 */
export const PermissionToolCallSchema = z
  .object({
    toolCallId: z.string().catch(""),
    title: z.string().nullish().catch(undefined),
    kind: z.string().nullish().catch(undefined),
    rawInput: JsonValueSchema.optional(),
    content: z.array(z.unknown()).nullish().catch(undefined),
  })
  .loose();
export type PermissionToolCall = z.infer<typeof PermissionToolCallSchema>;

/** `session/request_permission` as an asking client reads it: nothing in it may make it unanswerable. */
export const PermissionQuestionSchema = z.object({
  options: z.array(z.unknown()).catch([]),
  toolCall: PermissionToolCallSchema.catch({ toolCallId: "" }),
});

/** A question's tool call as the tool call events read it (`AcpToolCalls`). */
export const PermissionCallSchema = z.object({ toolCall: ToolCallUpdateSchema });

/** A usable option of a question (others are skipped). */
export function permissionOptions(options: unknown[]): PermissionOption[] {
  return options.flatMap((option) => {
    const parsed = PermissionOptionSchema.safeParse(option);
    return parsed.success ? [parsed.data] : [];
  });
}

/** A `diff` item of a tool call's content: the file, its text before (null or absent: a new file) and after. */
export const DiffContentSchema = z
  .object({
    type: z.literal("diff"),
    path: z.string(),
    oldText: z.string().nullish(),
    newText: z.string(),
    _meta: z.looseObject({ kind: z.string().optional() }).nullish().catch(undefined),
  })
  .loose();
export type DiffContent = z.infer<typeof DiffContentSchema>;
