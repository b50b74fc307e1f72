/**
 * The parts of Codex's app-server protocol (v2, as `codex app-server` 0.169 speaks it) the driver
 * reads. Objects are parsed loosely: Codex adds fields in every release, and only these matter.
 */
import { z } from "zod";
import { JsonValueSchema } from "../../../protocol/json.js";

const IdOnly = z.object({ id: z.string() });

/** Result of `thread/start`. */
export const ThreadStartResultSchema = z.object({ thread: IdOnly, model: z.string().optional() });

/** Result of `turn/start`, and the params of `turn/started`. */
export const TurnHolderSchema = z.object({ turn: IdOnly });

/** `turn/completed`: how the turn ended (`completed`, `interrupted` or `failed`, with its error). */
export const TurnCompletedSchema = z.object({
  turn: z.object({
    id: z.string(),
    status: z.string(),
    error: z.object({ message: z.string() }).nullish(),
  }),
});

export const AgentMessageDeltaSchema = z.object({ delta: z.string() });

const McpContentSchema = z.object({ type: z.string(), text: z.string().optional() }).loose();

/** The items the driver maps (`item/started`, `item/completed`); other item types are skipped. */
export const ItemSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("agentMessage"), id: z.string(), text: z.string() }),
  z.object({
    type: z.literal("mcpToolCall"),
    id: z.string(),
    server: z.string(),
    tool: z.string(),
    status: z.string(),
    arguments: JsonValueSchema.nullish(),
    result: z.object({ content: z.array(McpContentSchema).nullish() }).nullish(),
    error: z.object({ message: z.string() }).nullish(),
  }),
  z.object({
    type: z.literal("commandExecution"),
    id: z.string(),
    command: z.union([z.string(), z.array(z.string())]),
    cwd: z.string().nullish(),
    status: z.string(),
    aggregatedOutput: z.string().nullish(),
    exitCode: z.number().nullish(),
  }),
  z.object({
    type: z.literal("fileChange"),
    id: z.string(),
    changes: z.array(z.object({ path: z.string() }).loose()),
    status: z.string(),
  }),
]);
export type Item = z.infer<typeof ItemSchema>;

export const ItemNotificationSchema = z.object({ item: z.object({ type: z.string() }).loose() });

/** `error`: a failure mid-turn; `willRetry` when Codex is about to try again. */
export const ErrorNotificationSchema = z.object({
  error: z.object({ message: z.string() }),
  willRetry: z.boolean().nullish(),
});

/** `warning` and `configWarning`. */
export const WarningSchema = z.object({ message: z.string().optional(), summary: z.string().optional() });

export const McpStartupSchema = z.object({
  name: z.string(),
  status: z.string(),
  error: z.string().nullish(),
});
