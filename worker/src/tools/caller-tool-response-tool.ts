import { z } from "zod";
import { JsonValueSchema } from "../../../protocol/json.js";
import { unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { defineTool } from "./define.js";

export const callerToolResponseTool = defineTool({
  name: "caller_tool_response",
  title: "Answer a droid's call to one of your tools",
  description:
    "Answer a caller_tool_request (from a notification, session events or session pending): give its " +
    "session_id and request_id, and either result " +
    "(any JSON; an MCP CallToolResult is passed through as is) or error (a message), not both. Each request is " +
    "answered once; an answer to a request the droid stopped waiting for is refused.",
  action: {
    description: "Answer a caller tool request.",
    access: "write",
    target: "project",
    example: {
      session_id: "ses_0123456789abcdef01234567",
      request_id: "call_0123456789abcdef",
      result: { content: [{ type: "text", text: "sent" }] },
    },
    timing: "sync",
    // One per relayed call: the session keeps each answer; the audit log keeps refusals.
    audit: "failures",
    input: z.object({
      session_id: z.string().min(1).max(64).describe("session_id of the caller_tool_request event."),
      request_id: z.string().min(1).max(128).describe("request_id of the caller_tool_request event."),
      result: JsonValueSchema.optional().describe("The tool's result (any JSON)."),
      error: z.string().nullable().optional().describe("Set instead of result when the tool failed."),
    }),
    async handler(args, ctx) {
      const stub = objects.session(ctx.env, args.session_id);
      const delivered = unwrap(
        await stub.respond({
          principal: ctx.principal,
          requestId: args.request_id,
          result: args.result,
          error: args.error,
          via: ctx.mcp?.via ?? null,
        }),
      );
      ctx.mcp?.remember(args.session_id);
      return delivered;
    },
  },
});
