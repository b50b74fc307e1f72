/**
 * The host channel's project requests (registry → host): a project owns one container on its
 * host; its volume holds its workspaces; `container_exec` / `container_logs` act on that
 * container. Every one is idempotent where it can be, and refuses with `data.reason` otherwise.
 */
import { z } from "zod";
import { ProjectIdSchema, WorkspaceIdSchema } from "./ids.js";
import { NetworkPolicySchema } from "./network.js";
import { NetworkBlockedSchema } from "./network-activity.js";
import { ProjectSpecSchema } from "./project.js";
import { defineNotification, defineRequest, EmptyResultSchema } from "./rpc/method.js";
import { SetupResultSchema, SetupSpecSchema } from "./setup.js";

/** `project_ensure`: start the project's container unless it runs. */
export const ProjectEnsureParamsSchema = z.object({ project_id: ProjectIdSchema, spec: ProjectSpecSchema });
export const ProjectEnsureResultSchema = z.object({
  container_id: z.string(),
  started: z.boolean(),
  /** What the container could not be given as asked (a devcontainer.json's properties the host does not honour). */
  warnings: z.array(z.string().max(4096)).max(16).optional(),
});

/** `project_stop`: stop the container; every session in it ends with `reason`. */
export const ProjectStopParamsSchema = z.object({
  project_id: ProjectIdSchema,
  reason: z.string().max(1024),
});

/** `project_remove`: stop and remove the container, its socket directory and all its workspaces here. */
export const ProjectRemoveParamsSchema = z.object({ project_id: ProjectIdSchema });

/** `project_refresh`: recreate the container from the current image (refused while sessions run). */
export const ProjectRefreshParamsSchema = ProjectEnsureParamsSchema;

/**
 * `project_progress` (host → Worker, while a `project_ensure` or `project_refresh` of the project
 * runs): how far long work for it has come (an image's pull), for the caller's job or progress.
 */
export const ProjectProgressParamsSchema = z.object({
  project_id: ProjectIdSchema,
  message: z.string().max(1000),
});
export const ProjectRefreshResultSchema = z.object({ container_id: z.string() });

/** Remote URLs `workspace_create` clones: these schemes only, never an option-looking string. */
export const RemoteUrlSchema = z
  .string()
  .max(2048)
  .refine((url) => !url.startsWith("-") && /^(https?|ssh|file):\/\/[^\s]+$/.test(url), {
    message: "remote_url must be an https://, http://, ssh:// or file:// URL",
  });

/** The name of a git credential a host holds (its secret never leaves the host). */
export const GitCredentialNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    "a git credential name is 1-64 letters, digits, '_', '.' or '-'",
  );

/** A branch name the product pushes: no option, no path tricks, nothing git would refuse. */
export const GitBranchSchema = z
  .string()
  .regex(
    /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock(\/|$))[A-Za-z0-9._/-]{1,200}(?<![/.])$/,
    "a branch is 1-200 letters, digits, '.', '_', '-' or '/', not starting with '-' nor holding '..'",
  );

/** `workspace_create`: a directory in the project's volume, optionally `git init` or `git clone`. */
export const WorkspaceCreateParamsSchema = z.object({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
  init_git: z.boolean().default(false),
  remote_url: RemoteUrlSchema.optional(),
  /** The host's git credential the clone uses (by name). */
  git_credential: GitCredentialNameSchema.optional(),
  /** The project's disk bound (MiB), for a volume made by this request; the host's default when absent. */
  disk_mb: z.number().int().min(64).max(16_777_216).optional(),
  /** A branch to start in a workspace this request makes (from the remote's `base`). */
  branch: z
    .object({
      name: GitBranchSchema,
      base: GitBranchSchema.optional(),
    })
    .optional(),
});
export const WorkspaceCreateResultSchema = z.object({
  /** The workspace's path inside the container. */
  path: z.string(),
  git: z.enum(["init", "clone"]).nullable(),
  /** The branch it was started on and the commit it started from (only when this request made it). */
  branch: z.object({ name: z.string(), base_commit: z.string().nullable() }).optional(),
});

/** `workspace_delete`: remove a workspace (never `default`, never one a running session uses). */
export const WorkspaceDeleteParamsSchema = z.object({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
});

/** Largest `max_bytes` of a `workspace_read`: the answer must fit a tunnel frame. */
export const MAX_WORKSPACE_READ_BYTES = 512 * 1024;

/** `workspace_read`: list a directory or read a file inside a workspace (relative path, no escape). */
export const WorkspaceReadParamsSchema = z.object({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
  path: z.string().max(4096).default("."),
  kind: z.enum(["dir", "file"]),
  max_bytes: z
    .number()
    .int()
    .min(1)
    .max(MAX_WORKSPACE_READ_BYTES)
    .default(64 * 1024),
});
export const WorkspaceEntrySchema = z.object({ name: z.string(), type: z.enum(["file", "dir"]) });
export const WorkspaceReadResultSchema = z.union([
  z.object({ entries: z.array(WorkspaceEntrySchema), truncated: z.boolean().optional() }),
  z.object({ content: z.string(), truncated: z.boolean() }),
]);
export type WorkspaceReadResult = z.infer<typeof WorkspaceReadResultSchema>;

/**
 * `workspace_push`: push a workspace's branch to the project's remote. The container bundles the
 * branch, the host's own repository of the project takes the bundle and pushes from there, with
 * the host's credential of that name (docs/git.md).
 */
export const WorkspacePushParamsSchema = z.object({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
  /** Default: the branch the workspace was started on (a session's own branch). */
  branch: GitBranchSchema.optional(),
  remote_url: RemoteUrlSchema,
  git_credential: GitCredentialNameSchema.optional(),
});
/** What a remote said of a pushed branch: new, a fast-forward, or already there. */
export const PushOutcomeSchema = z.enum(["created", "updated", "up_to_date"]);

export const WorkspacePushResultSchema = z.object({
  branch: z.string(),
  commit: z.string(),
  outcome: PushOutcomeSchema,
});

/** `container_exec`: run an argv in the project's container (never through a shell on the host). */
export const ContainerExecParamsSchema = z.object({
  project_id: ProjectIdSchema,
  command: z.array(z.string().max(32_768)).min(1).max(256),
  cwd: z.string().max(4096).startsWith("/").optional(),
  timeout_ms: z.number().int().min(1).max(600_000).default(60_000),
  output_limit_bytes: z.number().int().min(1).max(1_048_576).default(65_536),
});
export type ContainerExecParams = z.infer<typeof ContainerExecParamsSchema>;
export const ContainerExecResultSchema = z.object({
  exit_code: z.number().int().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  timed_out: z.boolean(),
  duration_ms: z.number().int().nonnegative(),
});
export type ContainerExecResult = z.infer<typeof ContainerExecResultSchema>;

/** `container_logs`: the container's output (both streams), newest `tail` lines, optionally since a time. */
export const ContainerLogsParamsSchema = z.object({
  project_id: ProjectIdSchema,
  since: z.number().int().nonnegative().optional(),
  tail: z.number().int().min(1).max(10_000).default(200),
});
export type ContainerLogsParams = z.infer<typeof ContainerLogsParamsSchema>;
export const ContainerLogsResultSchema = z.object({ lines: z.array(z.string()), truncated: z.boolean() });
export type ContainerLogsResult = z.infer<typeof ContainerLogsResultSchema>;

/** `workspace_setup` (registry → host): run the project's setup in a workspace now (`workspace setup`). */
export const WorkspaceSetupParamsSchema = SetupSpecSchema.extend({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
});
export type WorkspaceSetupParams = z.infer<typeof WorkspaceSetupParamsSchema>;
export const WorkspaceSetupResultSchema = SetupResultSchema;

/** `project_network` (registry → host): the project's network policies changed (its running container's gate applies them now). */
export const ProjectNetworkParamsSchema = z.object({
  project_id: ProjectIdSchema,
  network: NetworkPolicySchema,
  setup_network: NetworkPolicySchema,
});

/**
 * `project_network_blocked` (host → registry, notification): the gate refused a connection of a
 * user's command (`exec`) or of the project's setup (`setup`); it becomes an audit entry.
 */
export const ProjectNetworkBlockedParamsSchema = NetworkBlockedSchema.extend({
  project_id: ProjectIdSchema,
  who: z.enum(["exec", "setup"]),
});
export type ProjectNetworkBlockedParams = z.infer<typeof ProjectNetworkBlockedParamsSchema>;

/** One project container a host has, as `host_hello` reports it. */
export const HostProjectSchema = z.object({ project_id: ProjectIdSchema, running: z.boolean() });
export type HostProject = z.infer<typeof HostProjectSchema>;

/** The project requests of the host channel (registry → host), with their schemas; part of `TunnelMethods`. */
export const ProjectMethods = {
  projectEnsure: defineRequest("project_ensure", {
    params: ProjectEnsureParamsSchema,
    result: ProjectEnsureResultSchema,
  }),
  projectStop: defineRequest("project_stop", { params: ProjectStopParamsSchema, result: EmptyResultSchema }),
  projectRemove: defineRequest("project_remove", {
    params: ProjectRemoveParamsSchema,
    result: EmptyResultSchema,
  }),
  projectRefresh: defineRequest("project_refresh", {
    params: ProjectRefreshParamsSchema,
    result: ProjectRefreshResultSchema,
  }),
  workspaceCreate: defineRequest("workspace_create", {
    params: WorkspaceCreateParamsSchema,
    result: WorkspaceCreateResultSchema,
  }),
  workspaceDelete: defineRequest("workspace_delete", {
    params: WorkspaceDeleteParamsSchema,
    result: EmptyResultSchema,
  }),
  workspaceRead: defineRequest("workspace_read", {
    params: WorkspaceReadParamsSchema,
    result: WorkspaceReadResultSchema,
  }),
  workspacePush: defineRequest("workspace_push", {
    params: WorkspacePushParamsSchema,
    result: WorkspacePushResultSchema,
  }),
  containerExec: defineRequest("container_exec", {
    params: ContainerExecParamsSchema,
    result: ContainerExecResultSchema,
  }),
  containerLogs: defineRequest("container_logs", {
    params: ContainerLogsParamsSchema,
    result: ContainerLogsResultSchema,
  }),
  workspaceSetup: defineRequest("workspace_setup", {
    params: WorkspaceSetupParamsSchema,
    result: WorkspaceSetupResultSchema,
  }),
  projectNetwork: defineRequest("project_network", {
    params: ProjectNetworkParamsSchema,
    result: EmptyResultSchema,
  }),
  projectNetworkBlocked: defineNotification("project_network_blocked", {
    params: ProjectNetworkBlockedParamsSchema,
  }),
  projectProgress: defineNotification("project_progress", { params: ProjectProgressParamsSchema }),
} as const;
