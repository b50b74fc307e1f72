import { z } from "zod";
import { objects } from "../objects/keys.js";
import { defineTool } from "./define.js";

export const auditTool = defineTool({
  name: "audit",
  title: "Audit log",
  description:
    "Every mutating call (tools, host operations), newest first: token id, action, target, outcome, time (admin and admin:ro).",
  action: {
    description: "Read the audit log.",
    access: "admin_read",
    target: "global",
    timing: "sync",
    example: { limit: 50 },
    input: z.object({
      limit: z.number().int().min(1).max(500).default(100),
      before: z.number().int().positive().optional().describe("next_before of the previous page."),
      token_id: z.string().max(128).optional().describe("Only this token's entries."),
      action_prefix: z
        .string()
        .max(128)
        .optional()
        .describe("Only actions starting with this (e.g. token.)."),
    }),
    async handler(args, ctx) {
      return objects.audit(ctx.env).list({
        before: args.before ?? null,
        limit: args.limit,
        tokenId: args.token_id ?? null,
        action: args.action_prefix ?? null,
      });
    },
  },
});
