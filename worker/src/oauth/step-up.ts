import { insufficientScope } from "@cloudflare/workers-oauth-provider";
import { resourceOf as accessResource, can } from "../auth/access.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { callerTools } from "../tools/catalog.js";
import { resourceOf } from "./endpoints.js";
import { scopeNeeded } from "./grant-scopes.js";

/**
 * Step-up for OAuth clients (MCP authorization, "scope challenge"): a `tools/call` an OAuth
 * token's scopes cannot allow is answered at the HTTP layer with `403` and
 * `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` naming the scopes it holds plus
 * the one the action needs, so the client signs in again for them in one round trip. The access
 * rule is the one tool dispatch applies (the tool's definition and `can`). API tokens cannot step
 * up: they keep getting the tool error, as before.
 */
export function stepUpChallenge(principal: CallerPrincipal, origin: string, body: string): Response | null {
  if (principal.oauth !== true) return null;
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return null;
  }
  const call = message as {
    method?: unknown;
    params?: { name?: unknown; arguments?: Record<string, unknown> };
  };
  if (call?.method !== "tools/call" || typeof call.params?.name !== "string") return null;
  const tool = callerTools.get(call.params.name);
  const actionName = call.params.arguments?.action;
  const action = tool && typeof actionName === "string" ? tool.definition.actions[actionName] : undefined;
  if (action === undefined) return null;
  const projectId = call.params.arguments?.project_id;
  const resource = accessResource(action.target, typeof projectId === "string" ? projectId : null);
  if (can(principal, action.access, resource)) return null;
  const needed = scopeNeeded(action.access, resource);
  return insufficientScope(
    { token: "", audience: resourceOf(origin), scope: principal.scopes },
    [...new Set([...principal.scopes, needed])],
    `${call.params.name} ${actionName} needs the scope ${needed}`,
  );
}
