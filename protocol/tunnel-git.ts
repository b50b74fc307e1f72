/**
 * Git of a project's workspaces (docs/git.md), on the host channel (registry → host) and on a
 * session's socket (its agent's own `git push`, through `git-remote-oubliette`). What needs a
 * working tree (status, diff, commit) runs in the container as the workspace's session; the host
 * reads only its output. What needs the network or a credential (push, a forge's API) runs on the
 * host, from the project's own repository.
 */
import { z } from "zod";
import { ProjectIdSchema, WorkspaceIdSchema } from "./ids.js";
import { defineRequest } from "./rpc/method.js";
import {
  GitBranchSchema,
  GitCredentialNameSchema,
  MAX_WORKSPACE_READ_BYTES,
  PushOutcomeSchema,
  RemoteUrlSchema,
} from "./tunnel-projects.js";

/** A revision to compare with: a branch, tag or commit name, never an option. */
export const GitRevisionSchema = z
  .string()
  .regex(/^(?!-)[A-Za-z0-9._/~^@{}-]{1,200}$/, "a revision is a branch, tag or commit name");

/** A commit's author (and committer). */
export const GitAuthorSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^<>\n]+$/, "an author name has no <, > or newline"),
  email: z
    .string()
    .min(3)
    .max(256)
    .regex(/^[^<>\s]+@[^<>\s]+$/, "an author email is name@domain"),
});
export type GitAuthor = z.infer<typeof GitAuthorSchema>;

/** Who commits when nobody is named. */
export const DEFAULT_GIT_AUTHOR: GitAuthor = { name: "Oubliette Edge", email: "droid@oubliette.invalid" };

/** The project's remote, as the host needs it for a session (its agent's own pushes). */
export const SessionGitSchema = z.object({
  remote_url: RemoteUrlSchema,
  git_credential: GitCredentialNameSchema.optional(),
});
export type SessionGit = z.infer<typeof SessionGitSchema>;

/** A branch a session starts on: made from `base` when its workspace is made. */
export const WorkspaceBranchSchema = z.object({
  name: GitBranchSchema,
  /** A branch of the remote (default: its default branch). */
  base: GitBranchSchema.optional(),
});
export type WorkspaceBranch = z.infer<typeof WorkspaceBranchSchema>;

const WorkspaceGitOpSchema = z.discriminatedUnion("op", [
  z.object({ op: z.literal("status") }),
  z.object({
    op: z.literal("diff"),
    /** What to compare the working tree with (default: the workspace's base, else HEAD). */
    base: GitRevisionSchema.optional(),
    max_bytes: z
      .number()
      .int()
      .min(1)
      .max(MAX_WORKSPACE_READ_BYTES)
      .default(256 * 1024),
  }),
  z.object({
    op: z.literal("commit"),
    message: z
      .string()
      .min(1)
      .max(64 * 1024),
    author: GitAuthorSchema.default(DEFAULT_GIT_AUTHOR),
  }),
]);

/** `workspace_git`: status, diff or commit in a workspace, run in the container. */
export const WorkspaceGitParamsSchema = z.intersection(
  z.object({ project_id: ProjectIdSchema, workspace_id: WorkspaceIdSchema }),
  WorkspaceGitOpSchema,
);
export type WorkspaceGitParams = z.infer<typeof WorkspaceGitParamsSchema>;

export const GitFileChangeSchema = z.object({
  path: z.string(),
  /** The path it was renamed or copied from. */
  from: z.string().optional(),
  /** Porcelain letters: index then working tree for status (`M.`, `??`), one letter for a diff (`A`, `M`, `D`, `R`). */
  status: z.string().max(2),
});
export type GitFileChange = z.infer<typeof GitFileChangeSchema>;

export const WorkspaceStatusResultSchema = z.object({
  op: z.literal("status"),
  /** The checked-out branch (null: detached, or no commit yet). */
  branch: z.string().nullable(),
  head: z.string().nullable(),
  clean: z.boolean(),
  files: z.array(GitFileChangeSchema),
  truncated: z.boolean(),
});
export const WorkspaceDiffResultSchema = z.object({
  op: z.literal("diff"),
  /** The revision compared with, and its commit. */
  base: z.string(),
  base_commit: z.string(),
  files: z.array(GitFileChangeSchema),
  diff: z.string(),
  /** The diff was cut at max_bytes (the file list is whole up to its own cap). */
  truncated: z.boolean(),
});
export const WorkspaceCommitResultSchema = z.object({
  op: z.literal("commit"),
  /** false: nothing to commit (the working tree matches HEAD). */
  committed: z.boolean(),
  branch: z.string().nullable(),
  commit: z.string().nullable(),
});
export const WorkspaceGitResultSchema = z.discriminatedUnion("op", [
  WorkspaceStatusResultSchema,
  WorkspaceDiffResultSchema,
  WorkspaceCommitResultSchema,
]);
export type WorkspaceGitResult = z.infer<typeof WorkspaceGitResultSchema>;

/** Where a forge's API is: derived from the remote unless given. */
export const ForgeSettingsSchema = z.strictObject({
  kind: z.enum(["github", "gitlab"]).optional(),
  api_url: z
    .string()
    .max(2048)
    .regex(/^https?:\/\/[^\s]+$/, "api_url is an https:// URL")
    .optional(),
});
export type ForgeSettings = z.infer<typeof ForgeSettingsSchema>;

/** `workspace_pull_request`: open a pull (merge) request on the project's forge, from the host. */
export const WorkspacePullRequestParamsSchema = z.object({
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema,
  remote_url: RemoteUrlSchema,
  git_credential: GitCredentialNameSchema,
  forge: ForgeSettingsSchema.default({}),
  /** The branch to merge (default: the branch the workspace was started on). */
  head: GitBranchSchema.optional(),
  /** The branch to merge into (default: the remote's default branch). */
  base: GitBranchSchema.optional(),
  title: z.string().min(1).max(256),
  body: z
    .string()
    .max(64 * 1024)
    .default(""),
  draft: z.boolean().default(false),
});
export const WorkspacePullRequestResultSchema = z.object({
  url: z.string(),
  number: z.number().int(),
  head: z.string(),
  base: z.string(),
});

/** The git requests of the host channel (registry → host); part of `TunnelMethods`. */
export const GitMethods = {
  workspaceGit: defineRequest("workspace_git", {
    params: WorkspaceGitParamsSchema,
    result: WorkspaceGitResultSchema,
  }),
  workspacePullRequest: defineRequest("workspace_pull_request", {
    params: WorkspacePullRequestParamsSchema,
    result: WorkspacePullRequestResultSchema,
  }),
} as const;

// ---- a session's socket: its agent's own git, through git-remote-oubliette ----

/** `git_list` (container-client → host-agent): the project remote's branches, as the host sees them. */
export const GitListParamsSchema = z.object({ url: z.string().max(2048) });
export const GitListResultSchema = z.object({
  refs: z.array(z.object({ name: z.string(), oid: z.string() })).max(10_000),
  /** The branch the remote's HEAD names. */
  head: z.string().nullable(),
});

/**
 * `git_push` (container-client → host-agent): push `src` (a branch of the repository at
 * `git_dir`, in the container) to branch `dst` of the project's remote. The host bundles it in
 * the container as the session and pushes from the project's repository.
 */
export const GitPushParamsSchema = z.object({
  url: z.string().max(2048),
  git_dir: z.string().min(1).max(4096).startsWith("/"),
  src: GitBranchSchema,
  dst: GitBranchSchema,
});
export const GitPushResultSchema = z.object({
  commit: z.string(),
  outcome: PushOutcomeSchema,
});

/**
 * `git_fetch` (container-client → host-agent): fetch branches of the project's remote into the
 * project's repository on the host and make a bundle of them; the client reads it with
 * `git_fetch_read` and unbundles it in its repository.
 */
export const GitFetchParamsSchema = z.object({
  url: z.string().max(2048),
  branches: z.array(GitBranchSchema).min(1).max(1000),
});
export const GitFetchResultSchema = z.object({
  bundle_id: z.string().uuid(),
  bytes: z.number().int().nonnegative(),
});

/** Largest chunk of a bundle one `git_fetch_read` answers (base64 in one socket line). */
export const GIT_FETCH_CHUNK_BYTES = 512 * 1024;

/** `git_fetch_read`: bytes of a fetched bundle from `offset` (base64); `eof` after the last. */
export const GitFetchReadParamsSchema = z.object({
  bundle_id: z.string().uuid(),
  offset: z.number().int().nonnegative(),
});
export const GitFetchReadResultSchema = z.object({ data: z.string(), eof: z.boolean() });

/** What the host tells a session of its agent's push (the session turns it into a `git_pushed` event). */
export const GitPushSchema = z.object({
  branch: GitBranchSchema,
  commit: z.string(),
  outcome: PushOutcomeSchema,
  remote_url: z.string().max(2048),
});
export type GitPush = z.infer<typeof GitPushSchema>;

/**
 * `git_pushed` (host → session, request): the session's agent pushed a branch through the host.
 * Re-sent under the same request id, `push_id`, after every reconnect until the session object
 * answers; the object tells its callers once per id.
 */
export const GitPushedParamsSchema = GitPushSchema.extend({
  push_id: z.string().regex(/^gp_[A-Za-z0-9-]{8,64}$/, "push_id is gp_ and an id"),
});
export type GitPushed = z.infer<typeof GitPushedParamsSchema>;
