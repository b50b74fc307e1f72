/**
 * Oubliette's tools as a droid holding an API key sees them (`oubliette_tools` /
 * `oubliette_call_tool`): the caller-facing catalogue, the same definitions and the same access
 * check, minus what only a caller does (answering caller tool and approval requests). The list shows a key
 * only the tools, and in them only the actions, its scopes could allow; a call of anything else
 * is refused with -32002 before it runs, and the key itself is checked on every call.
 */

import type { OublietteTool } from "../../../protocol/oubliette-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { can, resourceOf } from "../auth/access.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { toolDefinitions } from "./catalog.js";
import type { ToolDefinition } from "./define.js";
import { type CallEnvironment, type CallToolResult, callTool } from "./dispatch.js";
import { mcpInputSchema } from "./json-schema.js";
import { ToolRegistry } from "./registry.js";

/**
 * Tools only a caller uses: a droid never answers its own caller tool requests, and never
 * approves what it (or another droid of its project) asks to do.
 */
const CALLER_ONLY = new Set(["caller_tool_response", "approval_response"]);

export const droidTools = new ToolRegistry(toolDefinitions.filter((d) => !CALLER_ONLY.has(d.name)));

/** The actions of `tool` some scope of `principal` could allow (before a project is named). */
function allowedActions(principal: CallerPrincipal, tool: ToolDefinition): string[] {
  return Object.entries(tool.actions)
    .filter(([, def]) => can(principal, def.access, resourceOf(def.target, null)))
    .map(([name]) => name);
}

/** The tools a key may use, each narrowed to the actions it may use. */
export function droidToolList(principal: CallerPrincipal): OublietteTool[] {
  const tools: OublietteTool[] = [];
  for (const listing of droidTools.list()) {
    const registered = droidTools.get(listing.name);
    if (!registered) continue;
    const definition = registered.definition;
    const allowed = allowedActions(principal, definition);
    if (allowed.length === 0) continue;
    const narrowed: ToolDefinition =
      allowed.length === Object.keys(definition.actions).length
        ? definition
        : {
            ...definition,
            actions: Object.fromEntries(
              allowed.map((name) => [name, definition.actions[name]]),
            ) as ToolDefinition["actions"],
          };
    tools.push({
      name: listing.name,
      title: listing.title,
      description: listing.description,
      // JSON Schema made from zod: JSON by construction.
      inputSchema: (narrowed === definition
        ? listing.inputSchema
        : mcpInputSchema(narrowed)) as OublietteTool["inputSchema"],
    });
  }
  return tools;
}

/**
 * Runs a droid's call. An unknown tool or action, or one the key's scopes do not allow (on the
 * project the arguments name), is refused with -32002; everything else is the MCP endpoint's
 * dispatch: argument validation, the access check again inside, audit (with the session).
 */
export async function droidCall(
  name: string,
  args: Record<string, unknown>,
  call: CallEnvironment,
): Promise<CallToolResult> {
  const tool = droidTools.get(name);
  if (!tool) throw new RpcError(RpcErrorCode.ToolNotAllowed, `no Oubliette tool named ${name}`);
  const actionName = tool.definition.single ?? (typeof args.action === "string" ? args.action : "");
  const def = tool.definition.actions[actionName];
  if (!def) {
    throw new RpcError(
      RpcErrorCode.ToolNotAllowed,
      `${name} has no action ${actionName || "(none given)"}; it has ${Object.keys(tool.definition.actions).join(", ")}`,
    );
  }
  const projectId = typeof args.project_id === "string" ? args.project_id : null;
  if (!can(call.principal, def.access, resourceOf(def.target, projectId))) {
    throw new RpcError(
      RpcErrorCode.ToolNotAllowed,
      `tool not allowed for this key's scope: ${tool.definition.single ? name : `${name}.${actionName}`} needs ${def.access} access${projectId ? ` on project ${projectId}` : ""}`,
    );
  }
  return callTool(droidTools, name, args, call);
}
