import { z } from "zod";
import type { GitEvent } from "../../../protocol/events.js";
import type { SetupEvent, SetupResult } from "../../../protocol/setup.js";
import {
  DEFAULT_GIT_AUTHOR,
  GitAuthorSchema,
  GitRevisionSchema,
  type WorkspaceGitParamsSchema,
  WorkspaceGitResultSchema,
  WorkspacePullRequestResultSchema,
} from "../../../protocol/tunnel-git.js";
import {
  GitBranchSchema,
  MAX_WORKSPACE_READ_BYTES,
  ProjectEnsureResultSchema,
  WorkspacePushResultSchema,
  WorkspaceReadResultSchema,
  WorkspaceSetupResultSchema,
} from "../../../protocol/tunnel-projects.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { errorMessage } from "../log.js";
import { objects } from "../objects/keys.js";
import {
  DEFAULT_WORKSPACE,
  ProjectIdSchema,
  projectSpec,
  setupSpec,
  WorkspaceIdSchema,
  workspaceGitParams,
  workspaceSetup,
} from "../projects/project-config.js";
import { EmptyResultSchema, onProjectHost, TunnelMethod } from "../projects/project-host.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";

/** A branch to push (the host checks it again). */
const BranchSchema = GitBranchSchema.optional().describe(
  "The branch to push (the same name on the remote; default: the branch the workspace was started on, for a session's own).",
);

const workspaceOf = {
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
};

/**
 * Runs status, diff or commit in a workspace (in the container, as its session; docs/git.md):
 * the action's arguments without `action`, and `op` naming what to run.
 */
function workspaceGit(
  env: Env,
  { action: _action, ...args }: { action?: string } & z.input<typeof WorkspaceGitParamsSchema>,
  signal?: AbortSignal,
) {
  return onProjectHost(
    env,
    args.project_id,
    TunnelMethod.workspaceGit,
    args,
    WorkspaceGitResultSchema,
    signal ? { signal } : {},
  );
}

/** The remote and its credential, for an action that needs them. */
async function projectRemote(env: Env, projectId: string) {
  const info = unwrap(await objects.project(env, projectId).info());
  const remoteUrl = info.remote_url;
  if (remoteUrl === null)
    throw new AppError("invalid_arguments", `project ${projectId} has no remote_url to push to`);
  return { ...info, remote_url: remoteUrl };
}

/**
 * Tells the sessions working in a workspace what happened to its branch. The push or pull request
 * is done either way: a session that cannot be told is logged, not the caller's failure.
 */
async function tellSessions(ctx: ToolContext, projectId: string, workspaceId: string, event: GitEvent) {
  try {
    const workspaces = unwrap(await objects.project(ctx.env, projectId).listWorkspaces());
    const sessions = workspaces.find((w) => w.workspace_id === workspaceId)?.running_sessions ?? [];
    await Promise.all(sessions.map((id) => objects.session(ctx.env, id).gitEvent(event)));
  } catch (err) {
    ctx.log.warn("could not tell a workspace's sessions of a git event", {
      project_id: projectId,
      workspace_id: workspaceId,
      type: event.type,
      error: errorMessage(err),
    });
  }
}

/** How long past a setup's timeout its host may take to answer. */
const SETUP_ANSWER_GRACE_MS = 30_000;

/** The workspace's running sessions hear how an on-demand setup ended (best effort). */
async function tellSetup(ctx: ToolContext, projectId: string, workspaceId: string, result: SetupResult) {
  const failed = result.steps.findIndex((s) => s.exit_code !== 0);
  const event: SetupEvent = {
    type: "setup_finished",
    workspace_id: workspaceId,
    status: result.status === "failed" ? "failed" : "ok",
    ...(failed >= 0
      ? {
          step: failed,
          command: result.steps[failed]?.command ?? "",
          exit_code: result.steps[failed]?.exit_code ?? null,
        }
      : {}),
    duration_ms: result.duration_ms,
    message: result.message,
  };
  try {
    const workspaces = unwrap(await objects.project(ctx.env, projectId).listWorkspaces());
    const sessions = workspaces.find((w) => w.workspace_id === workspaceId)?.running_sessions ?? [];
    await Promise.all(sessions.map((id) => objects.session(ctx.env, id).setupEvent(event)));
  } catch (err) {
    ctx.log.warn("could not tell a workspace's sessions of its setup", {
      project_id: projectId,
      workspace_id: workspaceId,
      error: errorMessage(err),
    });
  }
}

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
    "A project's workspaces: directories under /workspace in its container, one per line of work. Create one with session spawn (workspace_id, create_workspace, or branch for a session's own branch). " +
    "List and read their files; git status, diff and commit (run in the container); push a branch to the project's remote and open a pull request, from the host with its credential.",
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
    status: action({
      description:
        "The workspace's git status: its branch, HEAD, and the files changed, staged or new (run in the container as its session).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default" },
      input: z.object(workspaceOf),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        return {
          workspace_id: args.workspace_id,
          ...(await workspaceGit(ctx.env, { ...args, op: "status" })),
        };
      },
    }),
    diff: action({
      description:
        "What the workspace changed against its base (the commit its branch started from; else HEAD, or the base you name): " +
        "the files changed and a unified diff up to max_bytes (new files included).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default" },
      input: z.object({
        ...workspaceOf,
        base: GitRevisionSchema.optional().describe("A branch, tag or commit to compare with."),
        max_bytes: z
          .number()
          .int()
          .min(1)
          .max(MAX_WORKSPACE_READ_BYTES)
          .default(256 * 1024)
          .describe("Most bytes of diff text (truncated: true beyond)."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        return { workspace_id: args.workspace_id, ...(await workspaceGit(ctx.env, { ...args, op: "diff" })) };
      },
    }),
    commit: action({
      description:
        "Commit everything the workspace changed (new files included) on its current branch, with your message and author. " +
        "committed: false when there is nothing to commit.",
      access: "write",
      target: "project",
      timing: "async_short",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default", message: "Fix the failing tests" },
      input: z.object({
        ...workspaceOf,
        message: z
          .string()
          .min(1)
          .max(64 * 1024),
        author: GitAuthorSchema.optional().describe(
          `Author and committer {name, email} (default: ${DEFAULT_GIT_AUTHOR.name} <${DEFAULT_GIT_AUTHOR.email}>).`,
        ),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        ctx.auditTarget(`${args.project_id} ${args.workspace_id}`);
        return {
          workspace_id: args.workspace_id,
          ...(await workspaceGit(ctx.env, { ...args, op: "commit" }, ctx.signal)),
        };
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
      input: z.object({ ...workspaceOf, branch: BranchSchema }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const info = await projectRemote(ctx.env, args.project_id);
        ctx.auditTarget(`${args.project_id} ${args.workspace_id} ${args.branch ?? ""}`.trim());
        const pushed = await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspacePush,
          {
            workspace_id: args.workspace_id,
            ...(args.branch !== undefined ? { branch: args.branch } : {}),
            remote_url: info.remote_url,
            ...(info.git_credential !== null ? { git_credential: info.git_credential } : {}),
          },
          WorkspacePushResultSchema,
          { signal: ctx.signal },
        );
        await tellSessions(ctx, args.project_id, args.workspace_id, {
          type: "git_pushed",
          ...pushed,
          remote_url: info.remote_url,
          by: "caller",
        });
        return { ...pushed, remote_url: info.remote_url };
      },
    }),
    pull_request: action({
      description:
        "Open a pull request (GitHub, GitHub Enterprise, Gitea-compatible) or merge request (GitLab) for a pushed branch, " +
        "through the forge's API from the host with the project's git_credential; returns its URL. " +
        "The forge is known from remote_url (github.com, gitlab.com) or the project's forge setting.",
      access: "write",
      target: "project",
      timing: "async_short",
      example: {
        project_id: EXAMPLE_PROJECT,
        workspace_id: "default",
        head: "oubliette/fix-tests",
        title: "Fix the failing tests",
      },
      input: z.object({
        ...workspaceOf,
        head: GitBranchSchema.optional().describe(
          "The branch to merge (default: the branch the workspace was started on). Push it first.",
        ),
        base: GitBranchSchema.optional().describe(
          "The branch to merge into (default: the remote's default branch).",
        ),
        title: z.string().min(1).max(256),
        body: z
          .string()
          .max(64 * 1024)
          .default(""),
        draft: z.boolean().default(false),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const info = await projectRemote(ctx.env, args.project_id);
        if (info.git_credential === null)
          throw new AppError(
            "invalid_arguments",
            `project ${args.project_id} has no git_credential; the forge's API needs the host's token`,
          );
        ctx.auditTarget(`${args.project_id} ${args.workspace_id} ${args.head ?? ""}`.trim());
        const opened = await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspacePullRequest,
          {
            workspace_id: args.workspace_id,
            remote_url: info.remote_url,
            git_credential: info.git_credential,
            forge: info.forge ?? {},
            ...(args.head !== undefined ? { head: args.head } : {}),
            ...(args.base !== undefined ? { base: args.base } : {}),
            title: args.title,
            body: args.body,
            draft: args.draft,
          },
          WorkspacePullRequestResultSchema,
          { signal: ctx.signal },
        );
        await tellSessions(ctx, args.project_id, args.workspace_id, {
          type: "pull_request_opened",
          ...opened,
          title: args.title,
        });
        return opened;
      },
    }),
    setup: action({
      description:
        "Run the project's setup steps in a workspace now (its container started first), under its setup_network: after a failed setup, or to install again. Answers each step's exit code and the end of its output; the workspace's sessions get a setup_finished event. A workspace whose setup failed takes no new session until this succeeds.",
      access: "write",
      target: "project",
      timing: "async_long",
      example: { project_id: EXAMPLE_PROJECT, workspace_id: "default" },
      input: z.object(workspaceOf),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const config = unwrap(await objects.project(ctx.env, args.project_id).info());
        const spec = setupSpec(config);
        if (spec === null)
          throw new AppError(
            "invalid_arguments",
            `project ${args.project_id} has no setup steps (project update setup)`,
          );
        // The container runs the steps: started (and the workspace there) first.
        await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspaceCreate,
          {
            workspace_id: args.workspace_id,
            ...workspaceGitParams(workspaceSetup(config, args.workspace_id)),
          },
          EmptyResultSchema,
          { place: true },
        );
        await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.projectEnsure,
          { spec: projectSpec(config) },
          ProjectEnsureResultSchema,
          { place: true },
        );
        const result = await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspaceSetup,
          { workspace_id: args.workspace_id, ...spec },
          WorkspaceSetupResultSchema,
          { timeoutMs: spec.timeout_ms + SETUP_ANSWER_GRACE_MS, signal: ctx.signal },
        );
        await tellSetup(ctx, args.project_id, args.workspace_id, result);
        return { project_id: args.project_id, workspace_id: args.workspace_id, ...result };
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
