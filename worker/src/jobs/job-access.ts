import { can, GLOBAL, project, visibleProjects } from "../auth/access.js";
import { type Access, readsOnly, type Target } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { AppError } from "../errors.js";

/**
 * Whose a job is: the project its work acts on (a project action's job), or the installation
 * (a global action's). Access to it follows the seed's table for that target; a global job is
 * read like any global listing, a project-scoped token seeing only those of its own projects.
 */
export function mayUseJob(
  principal: CallerPrincipal,
  access: Access,
  job: { target: Target; project_id: string | null },
): boolean {
  if (job.target === "project" && job.project_id !== null)
    return can(principal, access, project(job.project_id));
  if (!can(principal, access, GLOBAL)) return false;
  if (!readsOnly(access)) return true;
  const visible = visibleProjects(principal);
  return visible === null || (job.project_id !== null && visible.has(job.project_id));
}

/** Throws `forbidden` unless `mayUseJob`. */
export function requireJobAccess(
  principal: CallerPrincipal,
  access: Access,
  job: { job_id: string; target: Target; project_id: string | null },
): void {
  if (mayUseJob(principal, access, job)) return;
  const whose = job.project_id === null ? "" : ` of project ${job.project_id}`;
  throw new AppError(
    "forbidden",
    `token ${principal.tokenId} may not ${access === "read" ? "read" : "cancel"} job ${job.job_id}${whose} (needs ${access} access)`,
  );
}
