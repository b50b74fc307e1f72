import { z } from "zod";

/**
 * Token scopes: `admin`, `admin:ro`, `project:<id>`, `project:<id>:ro`. What each allows is
 * decided in one place, `access.ts`.
 */
export const ScopeSchema = z
  .string()
  .regex(
    /^(admin(:ro)?|project:[A-Za-z0-9_-]{1,64}(:ro)?)$/,
    "scope must be admin, admin:ro, project:<id> or project:<id>:ro",
  );
export type Scope = z.infer<typeof ScopeSchema>;

/**
 * What a tool action does: reads, writes, reads the installation's administration (tokens, hosts,
 * the audit log: `admin_read`), or administers it (`admin`).
 */
export type Access = "read" | "write" | "admin_read" | "admin";

/** Whether an action of this access only reads (never audited as a change, allowed to `:ro` scopes). */
export function readsOnly(access: Access): boolean {
  return access === "read" || access === "admin_read";
}
/** What it acts on: the whole installation (global) or one project. */
export type Target = "global" | "project";

export interface ParsedScope {
  /** null for admin scopes. */
  project: string | null;
  readOnly: boolean;
}

export function parseScope(scope: Scope): ParsedScope {
  const readOnly = scope.endsWith(":ro");
  const body = readOnly ? scope.slice(0, -3) : scope;
  return { project: body === "admin" ? null : body.slice("project:".length), readOnly };
}

/** The project a scope is limited to, or null for admin scopes. */
export function scopeProject(scope: Scope): string | null {
  return parseScope(scope).project;
}
