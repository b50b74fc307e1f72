import { AppError, unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { objects } from "../objects/keys.js";
import { type ScheduleTarget, targetKey } from "../schedules/schedule-record.js";

/** Targets one schedule may have. */
export const MAX_TARGETS = 20;

/**
 * Checks the targets a caller gives a schedule: the caller may write each project, the project
 * exists, the workspace (when named) exists in it, and no target is given twice.
 */
export async function checkedTargets(
  ctx: ToolContext,
  targets: { project_id: string; workspace_id?: string | undefined }[],
): Promise<ScheduleTarget[]> {
  const checked = targets.map((t) => ({ project_id: t.project_id, workspace_id: t.workspace_id ?? null }));
  const keys = new Set(checked.map(targetKey));
  if (keys.size !== checked.length) throw new AppError("invalid_arguments", "targets names a target twice");
  for (const t of checked) ctx.authorizeProject(t.project_id);
  for (const projectId of new Set(checked.map((t) => t.project_id))) {
    if (!(await objects.projectDirectory(ctx.env).exists(projectId))) {
      throw new AppError("not_found", `no project ${projectId}`);
    }
    const named = checked.filter((t) => t.project_id === projectId && t.workspace_id !== null);
    if (named.length === 0) continue;
    const workspaces = unwrap(await objects.project(ctx.env, projectId).listWorkspaces());
    for (const t of named) {
      if (!workspaces.some((w) => w.workspace_id === t.workspace_id)) {
        throw new AppError("not_found", `no workspace ${t.workspace_id} in project ${projectId}`);
      }
    }
  }
  return checked;
}
