import { can, project } from "../auth/access.js";
import { type Authority, principalById } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { objects } from "../objects/keys.js";
import type { Creator, ScheduleTarget } from "./schedule-record.js";
import { projectsOf } from "./schedule-record.js";

/**
 * A schedule runs with the authority of the token that created it, checked at every run: the
 * token must still work (not revoked, not expired, still configured) and still be allowed to
 * write every target's project, and each project must still exist. A refusal says why; the
 * schedule then turns itself off, since none of these comes back by waiting.
 */
export async function creatorAuthority(
  env: Env,
  creator: Creator,
  targets: readonly ScheduleTarget[],
): Promise<Authority> {
  const authority = await principalById(env, creator.tokenId, creator.issued);
  if (!authority.ok) return authority;
  for (const projectId of projectsOf(targets)) {
    if (!can(authority.principal, "write", project(projectId))) {
      return { ok: false, reason: `token ${creator.tokenId} may no longer write project ${projectId}` };
    }
    if (!(await objects.projectDirectory(env).exists(projectId))) {
      return { ok: false, reason: `project ${projectId} no longer exists` };
    }
  }
  return authority;
}
