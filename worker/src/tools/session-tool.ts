import { z } from "zod";
import { CallerIdSchema, CallerToolListSchema } from "../../../protocol/caller-tools.js";
import { SessionIdSchema as SessionIdFormat } from "../../../protocol/ids.js";
import { checkSize, type SizedKind } from "../../../protocol/limits.js";
import { randomHex } from "../auth/digest.js";
import { config } from "../env.js";
import { AppError, type Result, unwrap } from "../errors.js";
import type { CallerDeclaration } from "../session/types.js";
import type { ToolContext } from "./context.js";
import { action, defineActionTool } from "./define.js";
import { invalidJsonSchema } from "./input-schema-check.js";

const SessionIdSchema = SessionIdFormat.describe("Session id returned by spawn.");
const ProjectIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "project_id must be 1-64 letters, digits, '_' or '-'");

/** Caller tools may be declared top-level or inside `context` (both forms appear in the seeds). */
const callerFields = {
  caller_id: CallerIdSchema.optional().describe(
    "Your caller id; your tools appear to the droid as {caller_id}_{tool}.",
  ),
  caller_tools: CallerToolListSchema.optional().describe(
    "Tools you implement and lend to the droid: [{name, description, inputSchema}]. Re-declaring replaces the list.",
  ),
  context: z
    .object({ caller_id: CallerIdSchema.optional(), caller_tools: CallerToolListSchema.optional() })
    .catchall(z.unknown())
    .optional()
    .describe("Session context; may carry caller_id and caller_tools instead of the top-level fields."),
};

type CallerFields = {
  caller_id?: string | undefined;
  caller_tools?: CallerDeclaration["tools"] | undefined;
  context?:
    | { caller_id?: string | undefined; caller_tools?: CallerDeclaration["tools"] | undefined }
    | undefined;
};

/** Merges the two declaration forms; giving the same field both ways with different values is an error. */
export function callerDeclaration(args: CallerFields): CallerDeclaration | null {
  const pick = <T>(name: string, top: T | undefined, inContext: T | undefined): T | undefined => {
    if (top !== undefined && inContext !== undefined && JSON.stringify(top) !== JSON.stringify(inContext)) {
      throw new AppError(
        "invalid_arguments",
        `${name} is given both top-level and in context, with different values`,
      );
    }
    return top ?? inContext;
  };
  const callerId = pick("caller_id", args.caller_id, args.context?.caller_id);
  const tools = pick("caller_tools", args.caller_tools, args.context?.caller_tools);
  if (callerId === undefined && tools === undefined) return null;
  if (callerId === undefined) throw new AppError("invalid_arguments", "caller_tools needs a caller_id");
  const declaration = { callerId, tools: tools ?? [] };
  requireFits("declaration", { caller_id: declaration.callerId, caller_tools: declaration.tools });
  declaration.tools.forEach((tool, i) => {
    if (tool.inputSchema === undefined) return;
    const problem = invalidJsonSchema(tool.inputSchema);
    if (problem !== null) {
      throw new AppError(
        "invalid_arguments",
        `caller_tools[${i}] (${tool.name}): inputSchema is not a valid JSON Schema: ${problem}`,
      );
    }
  });
  return declaration;
}

/** Refuses input over its budget (protocol/limits.ts) with a too_large error naming the limit. */
function requireFits(kind: SizedKind, value: unknown): void {
  const tooLarge = checkSize(kind, value);
  if (tooLarge) throw new AppError("too_large", tooLarge.message);
}

function sessionStub(ctx: ToolContext, sessionId: string) {
  return ctx.env.SESSIONS.get(ctx.env.SESSIONS.idFromName(sessionId));
}

/** Unwraps a session RPC result and subscribes the calling MCP session to the session. */
function settled<T>(ctx: ToolContext, sessionId: string, result: Result<T>): T {
  const value = unwrap(result);
  ctx.mcp?.remember(sessionId);
  return value;
}

export const sessionTool = defineActionTool({
  name: "session",
  title: "Droid sessions",
  description:
    "Start a droid in a container, send it messages, lend it your tools and read its events. " +
    "Events (including caller_tool_request) also arrive as notifications/message on your MCP stream.",
  target: "project",
  actions: {
    spawn: action({
      description: "Start a new session (a droid in a container) and return its id.",
      access: "write",
      timing: "sync",
      input: z.object({
        project_id: ProjectIdSchema.default("default").describe("Project to run in (default: default)."),
        prompt: z.string().optional().describe("First message for the droid (at most 256 KiB encoded)."),
        ...callerFields,
        caller_timeout_seconds: z
          .number()
          .int()
          .positive()
          .optional()
          .describe("How long the droid waits for your answer to one of its calls (default 60)."),
        image: z.string().max(256).optional().describe("Container image (default: the host's droid image)."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const cfg = config(ctx.env);
        const timeoutMs =
          args.caller_timeout_seconds === undefined
            ? cfg.callerTimeoutMs
            : args.caller_timeout_seconds * 1000;
        if (timeoutMs > cfg.maxCallerTimeoutMs) {
          throw new AppError(
            "invalid_arguments",
            `caller_timeout_seconds may be at most ${cfg.maxCallerTimeoutMs / 1000}`,
          );
        }
        if (args.prompt !== undefined) requireFits("message", args.prompt);
        const caller = callerDeclaration(args);
        const sessionId = `ses_${randomHex(12)}`;
        const result = await sessionStub(ctx, sessionId).create({
          sessionId,
          projectId: args.project_id,
          owner: ctx.principal,
          caller,
          callerTimeoutMs: timeoutMs,
          prompt: args.prompt ?? null,
          image: args.image ?? null,
          via: ctx.mcp?.via ?? null,
        });
        return settled(ctx, sessionId, result);
      },
    }),
    message: action({
      description: "Send a message to the droid and/or re-declare your caller tools.",
      access: "write",
      timing: "sync",
      input: z.object({
        session_id: SessionIdSchema,
        message: z.string().optional().describe("Message for the droid (at most 256 KiB encoded)."),
        ...callerFields,
      }),
      async handler(args, ctx) {
        if (args.message !== undefined) requireFits("message", args.message);
        const caller = callerDeclaration(args);
        if (args.message === undefined && caller === null) {
          throw new AppError("invalid_arguments", "give a message, caller tools, or both");
        }
        const result = await sessionStub(ctx, args.session_id).sendMessage({
          principal: ctx.principal,
          message: args.message ?? null,
          caller,
          via: ctx.mcp?.via ?? null,
        });
        return settled(ctx, args.session_id, result);
      },
    }),
    get: action({
      description: "Get a session's status, host, caller tools and pending requests.",
      access: "read",
      timing: "sync",
      input: z.object({ session_id: SessionIdSchema }),
      async handler(args, ctx) {
        const result = await sessionStub(ctx, args.session_id).getInfo(ctx.principal, ctx.mcp?.via ?? null);
        return settled(ctx, args.session_id, result);
      },
    }),
    events: action({
      description: "Read the session's events from since_index on (each event has an index).",
      access: "read",
      timing: "sync",
      input: z.object({
        session_id: SessionIdSchema,
        since_index: z
          .number()
          .int()
          .nonnegative()
          .default(0)
          .describe("First event index to return (default 0)."),
        limit: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(100)
          .describe("Most events to return (default 100)."),
      }),
      async handler(args, ctx) {
        const stub = sessionStub(ctx, args.session_id);
        const result = await stub.readEvents(
          ctx.principal,
          args.since_index,
          args.limit,
          ctx.mcp?.via ?? null,
        );
        return settled(ctx, args.session_id, result);
      },
    }),
    end: action({
      description: "End the session: stop the droid and remove its container.",
      access: "write",
      timing: "sync",
      input: z.object({
        session_id: SessionIdSchema,
        reason: z
          .string()
          .max(1000)
          .default("ended by the caller")
          .describe("Why (recorded in the event log)."),
      }),
      async handler(args, ctx) {
        return unwrap(await sessionStub(ctx, args.session_id).end(ctx.principal, args.reason));
      },
    }),
  },
});
