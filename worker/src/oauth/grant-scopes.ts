import { can, type Resource } from "../auth/access.js";
import { type Access, parseScope, readsOnly, type Scope, ScopeSchema } from "../auth/scopes.js";

/**
 * OAuth scopes are the API tokens' scopes (`admin`, `admin:ro`, `project:<id>`,
 * `project:<id>:ro`), so a grant is checked by the same access rules as a token. A person grants
 * a client some of what the token they signed in with holds, never more.
 */

/** The installation-wide scopes (the authorization server's advertised catalogue). */
export const STATIC_SCOPES: readonly Scope[] = ["admin", "admin:ro"];

/**
 * What any access needs, which clients ask for first (RFC 9728 `scopes_supported`, the 401's
 * `scope`): reading. More comes by step-up: a 403 naming the scope an action needs.
 */
export const BASELINE_SCOPES: readonly Scope[] = ["admin:ro"];

/** Whether holding `held` lets a person grant `wanted` (every scope is at most as wide as one it holds). */
export function covers(held: readonly Scope[], wanted: Scope): boolean {
  const scope = parseScope(wanted);
  const principal = { tokenId: "", scopes: held };
  const resource: Resource = {
    kind: scope.project === null ? "global" : "project",
    projectId: scope.project,
  };
  if (scope.project === null) {
    // admin needs admin; admin:ro needs a scope that reads everything.
    return scope.readOnly ? held.some((h) => parseScope(h).project === null) : held.includes("admin");
  }
  return can(principal, scope.readOnly ? "read" : "write", resource);
}

/**
 * The scopes a person signed in with `held` may pick on the consent page: what they hold, the
 * read-only narrowing of each, and any other scope the client asked for that they cover (a
 * project scope an admin can grant). Ordered widest first, without repeats.
 */
export function grantableScopes(held: readonly Scope[], requested: readonly string[]): Scope[] {
  const offered: Scope[] = [];
  const add = (scope: Scope) => {
    if (!offered.includes(scope) && covers(held, scope)) offered.push(scope);
  };
  for (const scope of held) {
    add(scope);
    if (!scope.endsWith(":ro")) add(`${scope}:ro`);
  }
  for (const raw of requested) {
    const parsed = ScopeSchema.safeParse(raw);
    if (parsed.success) add(parsed.data);
  }
  return offered;
}

/** The scope an action needs (what a 403 asks a client to step up to). */
export function scopeNeeded(access: Access, resource: Resource): Scope {
  if (
    access === "admin" ||
    access === "admin_read" ||
    resource.kind === "global" ||
    resource.projectId === null
  ) {
    return readsOnly(access) ? "admin:ro" : "admin";
  }
  return access === "read" ? `project:${resource.projectId}:ro` : `project:${resource.projectId}`;
}
