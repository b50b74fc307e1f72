/**
 * A project's git on this host (docs/git.md), in one place: what runs in the container for a
 * workspace (status, diff, commit, the bundle of a push), and what runs here from the project's
 * own repository (push, ls-remote, a forge's API) with the host's credential.
 */

import { mkdir, rm } from "node:fs/promises";
import type { ForgeSettings, WorkspaceGitParams, WorkspaceGitResult } from "../../../protocol/tunnel-git.js";
import type { ContainerExecParams, ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { HostGitSettings } from "../projects/git.js";
import type { StdoutSink } from "../runtime/types.js";
import { FetchBundles } from "./fetch-bundles.js";
import { forgeTarget, openPullRequest } from "./forge.js";
import { ProjectRepo, type PushResult, type RemoteRefs } from "./project-repo.js";
import { checkRemote } from "./remote-policy.js";
import { workspaceGit } from "./workspace-git.js";
import { type BranchPush, pushWorkspace } from "./workspace-push.js";

/** Runs commands in a workspace of the project's container, as its session (ContainerCommands). */
export interface WorkspaceCommands {
  execInWorkspace(
    workspaceId: string,
    params: Omit<ContainerExecParams, "project_id" | "cwd">,
    stdout?: StdoutSink,
  ): Promise<ContainerExecResult>;
}

/** The branch each workspace was started on (Workspaces). */
export interface WorkspaceBranches {
  branchOf(workspaceId: string): Promise<{ name: string; base_commit: string | null } | null>;
}

export interface PullRequestInput {
  workspaceId: string;
  remoteUrl: string;
  credential: string;
  forge: ForgeSettings;
  head?: string | undefined;
  base?: string | undefined;
  title: string;
  body: string;
  draft: boolean;
}

export class ProjectGit {
  readonly #repo: ProjectRepo;
  readonly #incoming: string;
  /** Bundles fetched for the agents' own `git fetch`, until they are read. */
  readonly fetched: FetchBundles;

  constructor(
    readonly commands: WorkspaceCommands,
    readonly branches: WorkspaceBranches,
    paths: { repo: string; incoming: string },
    readonly settings: HostGitSettings,
  ) {
    this.#repo = new ProjectRepo(paths.repo, settings);
    this.#incoming = paths.incoming;
    this.fetched = new FetchBundles(paths.incoming);
  }

  /** status, diff or commit, in the container as the workspace's session. */
  workspace(params: WorkspaceGitParams): Promise<WorkspaceGitResult> {
    const exec = (command: string[], limits?: { outputBytes?: number; timeoutMs?: number }) =>
      this.commands.execInWorkspace(params.workspace_id, {
        command,
        timeout_ms: limits?.timeoutMs ?? 120_000,
        output_limit_bytes: limits?.outputBytes ?? 64 * 1024,
      });
    const baseOf = async () => (await this.branches.branchOf(params.workspace_id))?.base_commit ?? null;
    return workspaceGit(exec, params, baseOf);
  }

  /** A branch of a workspace to the remote, through the project's repository here. */
  push(workspaceId: string, push: BranchPush): Promise<PushResult> {
    const exec = (command: string[], stdout: StdoutSink, timeoutMs: number) =>
      this.commands.execInWorkspace(
        workspaceId,
        { command, timeout_ms: timeoutMs, output_limit_bytes: 16 * 1024 },
        stdout,
      );
    return pushWorkspace(exec, this.#repo, this.#incoming, push);
  }

  /** Fetches branches of the remote here and bundles them for the container: the bundle's id and size. */
  async fetchBundle(
    remoteUrl: string,
    credential: string | undefined,
    branches: string[],
  ): Promise<{ bundle_id: string; bytes: number }> {
    await mkdir(this.#incoming, { recursive: true, mode: 0o700 });
    const { id, file } = this.fetched.path();
    try {
      await this.#repo.fetchBundle(remoteUrl, credential, branches, file);
      return { bundle_id: id, bytes: await this.fetched.keep(id, file) };
    } catch (error) {
      await rm(file, { force: true });
      throw error;
    }
  }

  remoteRefs(remoteUrl: string, credential: string | undefined): Promise<RemoteRefs> {
    return this.#repo.remoteRefs(remoteUrl, credential);
  }

  /** Opens a pull (merge) request on the remote's forge with the credential's token. */
  async pullRequest(input: PullRequestInput) {
    const target = forgeTarget(input.remoteUrl, input.forge);
    // The API is reached from this host, as git is: the same policy decides where it may go.
    await checkRemote(target.apiUrl, this.settings.policy);
    const token = this.settings.credentials.tokenFor(input.credential);
    const head = input.head ?? (await this.branchOf(input.workspaceId));
    const base = input.base ?? (await this.remoteRefs(input.remoteUrl, input.credential)).head;
    if (base === null) throw new HostError("invalid", "the remote names no default branch; give base");
    const opened = await openPullRequest(target, token, {
      head,
      base,
      title: input.title,
      body: input.body,
      draft: input.draft,
    });
    return { url: opened.url, number: opened.number, head, base };
  }

  /** The branch a workspace was started on (a session's own), for a push or pull request that names none. */
  async branchOf(workspaceId: string): Promise<string> {
    const branch = await this.branches.branchOf(workspaceId);
    if (branch === null)
      throw new HostError(
        "invalid",
        `workspace ${workspaceId} was not started on a branch of its own; name the branch`,
      );
    return branch.name;
  }
}
