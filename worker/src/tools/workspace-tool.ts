import { z } from "zod";
import {
  GitBranchSchema,
  MAX_WORKSPACE_READ_BYTES,
  WorkspacePushResultSchema,
  WorkspaceReadResultSchema,
} from "../../../protocol/tunnel-projects.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { DEFAULT_WORKSPACE, ProjectIdSchema, WorkspaceIdSchema } from "../projects/project-config.js";
import { EmptyResultSchema, onProjectHost, TunnelMethod } from "../projects/project-host.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";

/** A branch to push (the host checks it again). */
const BranchSchema = GitBranchSchema.describe("The branch to push (the same name on the remote).");

/** A path inside a workspace, relative to it (the host checks it cannot leave the workspace). */
const WorkspacePathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((path) => !path.split("/").includes(".."), "a workspace path may not contain ..")
  .describe("Path relative to the workspace.");

/** Lists or reads a path of a workspace on the project's host. */
function readWorkspace(
  env: Env,
  args: { project_id: string; workspace_id: string; path: string },
  kind: "dir" | "file",
  maxBytes: number,
) {
  return onProjectHost(
    env,
    args.project_id,
    TunnelMethod.workspaceRead,
    { workspace_id: args.workspace_id, path: args.path, kind, max_bytes: maxBytes },
    WorkspaceReadResultSchema,
  );
}

export const workspaceTool = defineActionTool({
  name: "workspace",
  title: "Workspaces",
  description:
    "A project's workspaces: directories under /workspace in its container, one per line of work. Create one with session spawn (workspace_id, create_workspace). List a directory of one and read its files (read-only).",
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
    files: action({
      description:
        "List a directory of a workspace: its entries' names and types (a path may not leave the workspace).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default", path: "src" },
      input: z.object({
        project_id: ProjectIdSchema,
        workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
        path: WorkspacePathSchema.default("."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const listing = await readWorkspace(ctx.env, args, "dir", 64 * 1024);
        if (!("entries" in listing))
          throw new AppError("invalid_arguments", `${args.path} is a file; read it`);
        return { workspace_id: args.workspace_id, path: args.path, ...listing };
      },
    }),
    read: action({
      description:
        "Read a file of a workspace as text, up to max_bytes (truncated beyond; a path may not leave the workspace).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default", path: "README.md" },
      input: z.object({
        project_id: ProjectIdSchema,
        workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
        path: WorkspacePathSchema,
        max_bytes: z
          .number()
          .int()
          .min(1)
          .max(MAX_WORKSPACE_READ_BYTES)
          .default(256 * 1024),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const file = await readWorkspace(ctx.env, args, "file", args.max_bytes);
        if (!("content" in file))
          throw new AppError("invalid_arguments", `${args.path} is a directory; list it`);
        return { workspace_id: args.workspace_id, path: args.path, ...file };
      },
    }),
    push: action({
      description:
        "Push a branch of a workspace to the project's remote (remote_url), with the project's git_credential. " +
        "The container bundles the branch; the host's own repository of the project takes it and pushes from there, " +
        "so neither the credential nor the host's git ever meets the workspace.",
      access: "write",
      target: "project",
      timing: "async_short",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default", branch: "oubliette/fix-tests" },
      input: z.object({
        project_id: ProjectIdSchema,
        workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
        branch: BranchSchema,
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const info = unwrap(await objects.project(ctx.env, args.project_id).info());
        if (info.remote_url === null)
          throw new AppError("invalid_arguments", `project ${args.project_id} has no remote_url to push to`);
        ctx.auditTarget(`${args.project_id} ${args.workspace_id} ${args.branch}`);
        const pushed = await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspacePush,
          {
            workspace_id: args.workspace_id,
            branch: args.branch,
            remote_url: info.remote_url,
            ...(info.git_credential !== null ? { git_credential: info.git_credential } : {}),
          },
          WorkspacePushResultSchema,
          { signal: ctx.signal },
        );
        return { ...pushed, remote_url: info.remote_url };
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
