import { z } from "zod";
import { ApprovalAnswerSchema, ApprovalIdSchema } from "../../../protocol/approvals.js";
import { SessionIdSchema } from "../../../protocol/ids.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { defineTool } from "./define.js";

export const approvalResponseTool = defineTool({
  name: "approval_response",
  title: "Answer an agent's approval request",
  description:
    "Answer an approval_request (from a notification on logger oubliette.approval, session events or session " +
    "pending): allow runs the action once; allow_session also allows the rest of the session's requests of " +
    "that kind and pattern unasked; allow_project (network requests only) adds the host to the project's " +
    "network allowlist; deny refuses it, and message is what the agent is told. Any writer of the " +
    "session's project may answer; the first answer decides, later ones are refused, and a request nobody " +
    "answers by its deadline is denied.",
  action: {
    description: "Answer an approval request.",
    access: "write",
    target: "project",
    example: {
      session_id: "ses_0123456789abcdef01234567",
      request_id: "apr_0123456789abcdef",
      decision: "deny",
      message: "Do not push to main; open a pull request instead.",
    },
    timing: "sync",
    input: z.object({
      session_id: SessionIdSchema.describe("session_id of the approval_request event."),
      request_id: ApprovalIdSchema.describe("request_id of the approval_request event."),
      decision: ApprovalAnswerSchema.describe(
        "allow (once), allow_session (this kind and pattern from now on), allow_project (a network request's host, for the project) or deny.",
      ),
      message: z
        .string()
        .min(1)
        .max(2048)
        .optional()
        .describe("For deny: what the agent is told (default: the project's denial message)."),
    }),
    async handler(args, ctx) {
      // Never a droid's to answer, with whatever key it holds (it is not even listed to droids).
      if (ctx.viaSession !== undefined)
        throw new AppError(
          "forbidden",
          "a droid cannot answer approval requests; its caller or an operator does",
        );
      ctx.auditTarget(`${args.session_id}/${args.request_id}`);
      const decided = unwrap(
        await objects.session(ctx.env, args.session_id).answerApproval({
          principal: ctx.principal,
          requestId: args.request_id,
          answer: args.decision,
          message: args.message,
        }),
      );
      ctx.mcp?.remember(args.session_id);
      return { ...decided, session_id: args.session_id };
    },
  },
});
