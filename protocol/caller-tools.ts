import { z } from "zod";
import { JsonValueSchema } from "./json.js";

/** A caller id becomes the prefix of every tool it lends: `{caller_id}_{tool}`. */
export const CallerIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/,
    "caller_id must be 1-32 letters, digits or '-', starting with a letter or digit",
  );

/** Tool names follow the MCP tool-name rules (letters, digits, '_', '-', '.'). */
export const CallerToolNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, "tool name must be 1-64 letters, digits, '_', '-' or '.'");

/** The JSON Schema of a caller tool's arguments; MCP requires an object schema. */
export const ToolInputSchemaSchema = z
  .object({ type: z.literal("object", { message: 'inputSchema.type must be "object"' }) })
  .catchall(JsonValueSchema);
export type ToolInputSchema = z.infer<typeof ToolInputSchemaSchema>;

export const DEFAULT_INPUT_SCHEMA: ToolInputSchema = { type: "object" };

/** A tool a caller implements itself and lends to the droid. */
export const CallerToolSchema = z.object({
  name: CallerToolNameSchema,
  title: z.string().max(256).optional(),
  description: z.string().max(8192).optional(),
  inputSchema: ToolInputSchemaSchema.optional(),
});
export type CallerTool = z.infer<typeof CallerToolSchema>;

export const MAX_CALLER_TOOLS = 128;

export const CallerToolListSchema = z
  .array(CallerToolSchema)
  .max(MAX_CALLER_TOOLS)
  .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, {
    message: "caller_tools contains the same tool name twice",
  });

/** What the droid side needs to know about the caller's tools. Sent on every (re)declaration. */
export const CallerToolsConfigSchema = z.object({
  caller_id: CallerIdSchema.nullable(),
  tools: CallerToolListSchema,
  /** The server-side deadline of one caller tool call; the droid side must not give up sooner. */
  timeout_ms: z.number().int().positive(),
});
export type CallerToolsConfig = z.infer<typeof CallerToolsConfigSchema>;

/** The name the droid sees for a caller tool. */
export function prefixedToolName(callerId: string, tool: string): string {
  return `${callerId}_${tool}`;
}

/** Why a caller tool call failed, as seen by the droid. */
export const CallerToolFailureSchema = z.enum([
  "caller_error",
  "timeout",
  "caller_disconnected",
  "session_ended",
  "unknown_tool",
  "no_caller",
]);
export type CallerToolFailure = z.infer<typeof CallerToolFailureSchema>;

/** The outcome of one caller tool call, as relayed back to the droid. */
export const CallerToolOutcomeSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), result: JsonValueSchema }),
  z.object({
    ok: z.literal(false),
    error: z.object({ reason: CallerToolFailureSchema, message: z.string() }),
  }),
]);
export type CallerToolOutcome = z.infer<typeof CallerToolOutcomeSchema>;
