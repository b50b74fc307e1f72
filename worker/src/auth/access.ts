import { AppError } from "../errors.js";
import { type Access, parseScope, readsOnly, type Scope, type Target } from "./scopes.js";

/**
 * The one access check. Every tool action declares its access (read/write/admin) and target
 * (global/project); tool dispatch, HTTP routes and Durable Object entry points all ask `can`.
 * The rules are the permission table of the seed:
 *
 * | action kind      | admin | admin:ro | project:A       | project:A:ro   |
 * |------------------|-------|----------|-----------------|----------------|
 * | admin            | yes   | no       | no              | no             |
 * | admin_read       | yes   | yes      | no              | no             |
 * | global + write   | yes   | no       | no              | no             |
 * | global + read    | yes   | yes      | yes (own only)  | yes (own only) |
 * | project + write  | yes   | no       | on A            | no             |
 * | project + read   | yes   | yes      | on A            | on A           |
 *
 * "own only": a global listing shows a project-scoped token only its own project (the handler
 * filters with `visibleProjects`).
 */
export type Resource =
  | { kind: "global" }
  /** `projectId` null: not resolved yet (e.g. before a session's project is known): could any scope allow it? */
  | { kind: "project"; projectId: string | null };

export interface Scoped {
  tokenId: string;
  scopes: readonly Scope[];
}

export const GLOBAL: Resource = { kind: "global" };

export function project(projectId: string | null): Resource {
  return { kind: "project", projectId };
}

export function resourceOf(target: Target, projectId: string | null): Resource {
  return target === "global" ? GLOBAL : project(projectId);
}

export function can(principal: Scoped, access: Access, resource: Resource): boolean {
  return principal.scopes.some((raw) => {
    const scope = parseScope(raw);
    if (scope.readOnly && !readsOnly(access)) return false;
    if (scope.project === null) return true;
    if (access === "admin" || access === "admin_read") return false;
    if (resource.kind === "global") return access === "read";
    return resource.projectId === null || resource.projectId === scope.project;
  });
}

/** Throws `forbidden`, naming the token and what it lacks, unless `can` allows it. */
export function requireAccess(principal: Scoped, access: Access, resource: Resource, what: string): void {
  if (can(principal, access, resource)) return;
  const on = resource.kind === "project" && resource.projectId ? ` on project ${resource.projectId}` : "";
  throw new AppError("forbidden", `token ${principal.tokenId} may not ${what}${on} (needs ${access} access)`);
}

/** The projects a principal may see: null means every project (admin scopes). */
export function visibleProjects(principal: Scoped): Set<string> | null {
  const projects = new Set<string>();
  for (const raw of principal.scopes) {
    const scope = parseScope(raw);
    if (scope.project === null) return null;
    projects.add(scope.project);
  }
  return projects;
}
