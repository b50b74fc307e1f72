/**
 * Codex's requests to its client, answered at once so an unattended session never waits on a
 * person: approvals are granted (the container is the sandbox, and the thread asks for none with
 * `approvalPolicy: "never"`, so they are rare), an MCP tool call's approval is accepted, and what
 * only a person could fill in (a form, a question) is declined or left unanswered. In ask mode
 * codex-permission.ts takes the permission questions first; what is left comes here.
 */
import { z } from "zod";
import { JsonValueSchema } from "../../../protocol/json.js";
import type { RequestAnswer } from "./json-rpc.js";

const CommandApprovalSchema = z.object({ command: z.union([z.string(), z.array(z.string())]).nullish() });
const PermissionsSchema = z.object({ permissions: JsonValueSchema.optional() });
const ElicitationSchema = z.object({
  serverName: z.string().optional(),
  message: z.string().optional(),
  _meta: z.object({ codex_approval_kind: z.string().optional() }).loose().nullish(),
  meta: z.object({ codex_approval_kind: z.string().optional() }).loose().nullish(),
});

/** The answer to server request `method`, or undefined for a method the driver does not know. */
export function answerCodexRequest(method: string, params: unknown): RequestAnswer | undefined {
  switch (method) {
    case "item/commandExecution/requestApproval": {
      const command = CommandApprovalSchema.safeParse(params).data?.command;
      const shown = Array.isArray(command) ? command.join(" ") : command;
      return granted({ decision: "accept" }, `approved a command${shown ? `: ${shown}` : ""}`);
    }
    case "item/fileChange/requestApproval":
      return granted({ decision: "accept" }, "approved a file change");
    // The v1 names, still sent by older app-servers.
    case "execCommandApproval":
      return granted({ decision: "approved" }, "approved a command");
    case "applyPatchApproval":
      return granted({ decision: "approved" }, "approved a file change");
    case "item/permissions/requestApproval": {
      const permissions = PermissionsSchema.safeParse(params).data?.permissions ?? {};
      return granted({ permissions, scope: "turn" }, "granted the permissions asked for, for this turn");
    }
    case "mcpServer/elicitation/request":
      return answerElicitation(params);
    case "item/tool/requestUserInput":
      return {
        result: { answers: {} },
        granted: false,
        message: "left the agent's question unanswered: no one is there to answer it",
      };
    default:
      return undefined;
  }
}

function answerElicitation(params: unknown): RequestAnswer {
  const parsed = ElicitationSchema.safeParse(params);
  const meta = parsed.data?._meta ?? parsed.data?.meta;
  const server = parsed.data?.serverName ?? "an MCP server";
  if (meta?.codex_approval_kind === "mcp_tool_call") {
    return granted({ action: "accept", content: {}, _meta: null }, `approved a tool call of ${server}`);
  }
  return {
    result: { action: "decline", content: null, _meta: null },
    granted: false,
    message: `declined ${server}'s request for input: no one is there to fill it in`,
  };
}

function granted(result: unknown, message: string): RequestAnswer {
  return { result, granted: true, message };
}
