import { z } from "zod";

/**
 * Token scopes: `admin`, `admin:ro`, `project:<id>`, `project:<id>:ro`. Tools declare an access
 * level (read/write/admin) and a target (global/project); `isAllowed` is the one permission
 * check every path (MCP, container socket) goes through.
 */
export const ScopeSchema = z
  .string()
  .regex(
    /^(admin(:ro)?|project:[A-Za-z0-9_-]{1,64}(:ro)?)$/,
    "scope must be admin, admin:ro, project:<id> or project:<id>:ro",
  );
export type Scope = z.infer<typeof ScopeSchema>;

export type Access = "read" | "write" | "admin";
export type Target = "global" | "project";

interface ParsedScope {
  project: string | null;
  readOnly: boolean;
}

function parseScope(scope: Scope): ParsedScope {
  const readOnly = scope.endsWith(":ro");
  const body = readOnly ? scope.slice(0, -3) : scope;
  return { project: body === "admin" ? null : body.slice("project:".length), readOnly };
}

/**
 * Whether any of `scopes` allows `access` to a tool with `target`. For project tools,
 * `projectId` is the project the call touches (unknown until resolved: `undefined` checks only
 * that some scope could allow it).
 */
export function isAllowed(
  scopes: readonly Scope[],
  access: Access,
  target: Target,
  projectId?: string,
): boolean {
  return scopes.some((raw) => {
    const scope = parseScope(raw);
    if (scope.readOnly && access !== "read") return false;
    if (scope.project === null) return true;
    if (access === "admin") return false;
    if (target === "global") return access === "read";
    return projectId === undefined || projectId === scope.project;
  });
}
