import type { z } from "zod";
import { isAllowed } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import type { McpOrigin, ToolContext } from "./context.js";
import type { ToolRegistry } from "./registry.js";

/** An MCP `tools/call` result. */
export interface CallToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/** Thrown for a tool name the registry does not know: a protocol error (-32602), not a tool failure. */
export class UnknownToolError extends Error {
  constructor(readonly tool: string) {
    super(`Unknown tool: ${tool}`);
    this.name = "UnknownToolError";
  }
}

export interface CallEnvironment {
  env: Env;
  principal: CallerPrincipal;
  mcp: McpOrigin | null;
  log: Log;
  /** Keeps background work (fire-and-forget tools) alive. */
  waitUntil(promise: Promise<unknown>): void;
}

/** A failed tool call as MCP says it should look: `isError` with a message a person can act on. */
export function toolError(message: string, code?: string): CallToolResult {
  return {
    content: [{ type: "text", text: code ? `${message} (${code})` : message }],
    structuredContent: code ? { error: { code, message } } : { error: { message } },
    isError: true,
  };
}

/** A successful result: the value as JSON text, and as structured content when it is an object. */
export function toolResult(value: unknown): CallToolResult {
  const result: CallToolResult = { content: [{ type: "text", text: JSON.stringify(value) }] };
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    result.structuredContent = value as Record<string, unknown>;
  }
  return result;
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/**
 * Validates, authorizes and runs one tool call. Everything comes from the tool's definition:
 * the arguments schema, the action's access level and the tool's target.
 */
export async function callTool(
  registry: ToolRegistry,
  name: string,
  rawArguments: unknown,
  call: CallEnvironment,
): Promise<CallToolResult> {
  const tool = registry.get(name);
  if (!tool) throw new UnknownToolError(name);
  const parsed = tool.arguments.safeParse(rawArguments ?? {});
  if (!parsed.success) {
    return toolError(`Invalid arguments for ${name}: ${describeIssues(parsed.error)}`, "invalid_arguments");
  }
  const args = parsed.data;
  const def = tool.definition.actions[args.action];
  if (!def) return toolError(`Unknown action ${args.action} for ${name}`, "invalid_arguments");
  const label = tool.definition.single === undefined ? `${name}.${args.action}` : name;
  const { access } = def;
  const { target } = tool.definition;
  const projectId = typeof args.project_id === "string" ? args.project_id : undefined;
  if (!isAllowed(call.principal.scopes, access, target, projectId)) {
    return toolError(
      `Token ${call.principal.tokenId} may not use ${label} (needs ${access} access)`,
      "forbidden",
    );
  }
  const ctx: ToolContext = {
    env: call.env,
    principal: call.principal,
    mcp: call.mcp,
    log: call.log,
    authorizeProject(project) {
      if (!isAllowed(call.principal.scopes, access, target, project)) {
        throw new AppError(
          "forbidden",
          `Token ${call.principal.tokenId} may not use ${label} on project ${project}`,
        );
      }
    },
  };
  const run = async (): Promise<CallToolResult> => {
    try {
      return toolResult(await def.handler(args, ctx));
    } catch (err) {
      if (err instanceof AppError) return toolError(err.message, err.code);
      call.log.error("tool failed", { tool: label, error: errorMessage(err) });
      return toolError(`Internal error in ${label}`, "internal");
    }
  };
  if (def.timing === "fire_and_forget") {
    call.waitUntil(run());
    return toolResult({ status: "accepted" });
  }
  return run();
}
