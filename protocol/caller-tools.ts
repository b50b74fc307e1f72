import { z } from "zod";
import { JsonValueSchema } from "./json.js";
import { type JsonRpcErrorObject, RpcError, RpcErrorCode } from "./rpc/errors.js";

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

/**
 * A tool a caller implements itself and lends to the droid, as the wire carries it: not strict,
 * so a host or container-client older than a field ignores it.
 */
export const CallerToolSchema = z.object({
  name: CallerToolNameSchema,
  title: z.string().max(256).optional(),
  description: z.string().max(8192).optional(),
  inputSchema: ToolInputSchemaSchema.optional(),
});
export type CallerTool = z.infer<typeof CallerToolSchema>;

export const MAX_CALLER_TOOLS = 128;

function toolList<T extends z.ZodType<CallerTool>>(tool: T) {
  return z
    .array(tool)
    .max(MAX_CALLER_TOOLS)
    .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, {
      message: "caller_tools contains the same tool name twice",
    });
}

export const CallerToolListSchema = toolList(CallerToolSchema);

/**
 * The tools a caller declares (the session tool's input): an unknown key in an entry, e.g. a
 * misspelt `descripton`, is refused instead of dropped. `inputSchema` stays open: it is the
 * caller's JSON Schema, any keywords included.
 */
export const CallerToolDeclarationSchema = toolList(CallerToolSchema.strict());

/** What the droid side needs to know about the caller's tools. Sent on every (re)declaration. */
export const CallerToolsConfigSchema = z.object({
  caller_id: CallerIdSchema.nullable(),
  tools: CallerToolListSchema,
  /** The session object's deadline of one caller tool call, counted from when the call reaches it. */
  timeout_ms: z.number().int().positive(),
  /**
   * How long the host-agent and the container-client wait for an outcome, counted from when the
   * droid made the call: the deadline plus the reconnect budget. Only the session object decides a
   * call's outcome; these backstops fire only when it could not be reached for that long.
   */
  backstop_ms: z.number().int().positive(),
});
export type CallerToolsConfig = z.infer<typeof CallerToolsConfigSchema>;

/** The name the droid sees for a caller tool. */
export function prefixedToolName(callerId: string, tool: string): string {
  return `${callerId}_${tool}`;
}

/** Why a caller tool call failed, as seen by the droid. */
export const CallerToolFailureSchema = z.enum([
  /** The caller answered with an error. */
  "caller_error",
  /** The caller did not answer by the session object's deadline. */
  "timeout",
  /** The caller went away (ended its MCP session, or its stream dropped past the grace period). */
  "caller_disconnected",
  /** The session ended while the call waited. */
  "session_ended",
  /** The session's host was lost (gone past the grace period, or it no longer runs the session). */
  "host_lost",
  "unknown_tool",
  "no_caller",
  /** The droid cancelled the call (or its MCP client went away). */
  "cancelled",
  /** The arguments or the answer are over the size budget (`protocol/limits.ts`). */
  "too_large",
  /** Backstop: the host-agent could not reach the session object for the whole budget. */
  "worker_unreachable",
  /** Backstop: the container-client could not reach the host-agent for the whole budget. */
  "host_unreachable",
  /** Oubliette itself failed (a bug); the logs say more. */
  "internal",
  /** The session's approval policy, or a person asked by it, refused the call: the caller never saw it. */
  "denied",
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

/** A call's durable identity: chosen by the container-client and kept across every reconnect. */
export const CallIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/, "call_id must be 1-128 letters, digits, '_' or '-'");

/** `data` of the JSON-RPC error (code ServerError) a failed caller tool call is answered with. */
export const CallerToolErrorDataSchema = z.object({ reason: CallerToolFailureSchema });

/** The wire form of a failed call, on the socket and on the tunnel alike. */
export function failureToRpcError(reason: CallerToolFailure, message: string): RpcError {
  return new RpcError(RpcErrorCode.ServerError, message, { reason });
}

/** Reads a call's outcome back from a JSON-RPC error (anything unexpected is an internal failure). */
export function rpcErrorToOutcome(error: JsonRpcErrorObject): CallerToolOutcome {
  const data = CallerToolErrorDataSchema.safeParse(error.data);
  return {
    ok: false,
    error: { reason: data.success ? data.data.reason : "internal", message: error.message },
  };
}
