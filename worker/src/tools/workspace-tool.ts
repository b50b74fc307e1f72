import { z } from "zod";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema, WorkspaceIdSchema } from "../projects/project-config.js";
import { EmptyResultSchema, onProjectHost, TunnelMethod } from "../projects/project-host.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";

export const workspaceTool = defineActionTool({
  name: "workspace",
  title: "Workspaces",
  description:
    "A project's workspaces: directories under /workspace in its container, one per line of work. Create one with session spawn (workspace_id, create_workspace).",
  actions: {
    list: action({
      description: "List the project's workspaces and the sessions running in each.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT },
      input: z.object({ project_id: ProjectIdSchema }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        return { workspaces: unwrap(await objects.project(ctx.env, args.project_id).listWorkspaces()) };
      },
    }),
    delete: action({
      description: "Delete a workspace (not the default one, nor one a session runs in).",
      access: "write",
      target: "project",
      timing: "async_short",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "experiment-1" },
      input: z.object({ project_id: ProjectIdSchema, workspace_id: WorkspaceIdSchema }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const project = objects.project(ctx.env, args.project_id);
        unwrap(await project.deleteWorkspace(args.workspace_id, true));
        // Its directory on the project's host goes first; a project never started has none.
        await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspaceDelete,
          { workspace_id: args.workspace_id },
          EmptyResultSchema,
        ).catch((err: unknown) => {
          if (!(err instanceof AppError && err.code === "not_running")) throw err;
        });
        return unwrap(await project.deleteWorkspace(args.workspace_id));
      },
    }),
  },
});
