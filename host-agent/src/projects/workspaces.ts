/**
 * A project's workspaces on this host: directories in its volume, each with the owner its
 * container needs (see ownership.ts), the `default` one made with the project. Creating one may
 * run git for it (on the host, which has the network); deleting one removes it with everything
 * in it. Each workspace's group index is kept in `project.json`.
 */
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { posix } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { workspaceGid } from "../../../protocol/container-layout.js";
import { DEFAULT_WORKSPACE_ID, WORKSPACE_ID_PATTERN } from "../../../protocol/ids.js";
import type { WorkspaceBranch } from "../../../protocol/tunnel-git.js";
import type { WorkspaceReadResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "./errors.js";
import { gitClone, gitInit, gitStartBranch, type HostGitSettings } from "./git.js";
import { claim, claimTree, type OwnershipMode, ownerOf } from "./ownership.js";
import type { ProjectPaths } from "./project-paths.js";
import { workspaceIndex } from "./project-record.js";
import type { RecordStore } from "./record-store.js";
import { readWorkspace } from "./workspace-read.js";

export interface WorkspacesOptions {
  paths: ProjectPaths;
  ownership: OwnershipMode;
  record: RecordStore;
  /** /workspace as the project's workload sees it. */
  containerRoot: string;
  /** Makes the project's volume ready (mounted) before anything touches it. */
  volume(): Promise<void>;
  logger: Logger;
}

export interface CreatedWorkspace {
  path: string;
  git: "init" | "clone" | null;
  /** The branch it was started on, and the commit it started from. */
  branch?: { name: string; base_commit: string | null };
}

export class Workspaces {
  readonly #o: WorkspacesOptions;

  constructor(options: WorkspacesOptions) {
    this.#o = options;
  }

  /** The workspace's path inside the container. */
  containerPath(workspaceId: string): string {
    return posix.join(this.#o.containerRoot, workspaceId);
  }

  /**
   * Makes the project's volume ready for a container with (or without) isolation: the root, the
   * default workspace, and the owner of every workspace directory there is.
   */
  async prepare(isolation: boolean): Promise<void> {
    const { paths } = this.#o;
    await this.#o.volume();
    await mkdir(paths.workspaces, { recursive: true });
    await this.#o.record.update((record) => {
      record.isolation = isolation;
    });
    await claim(paths.workspaces, ownerOf(this.#o.ownership, { kind: "workspaces", isolation }));
    await mkdir(paths.workspace(DEFAULT_WORKSPACE_ID), { recursive: true });
    for (const id of await this.list()) await claim(paths.workspace(id), await this.#owner(id));
  }

  /** Workspace ids present on this host. */
  async list(): Promise<string[]> {
    await this.#o.volume();
    const entries = await readdir(this.#o.paths.workspaces, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory() && WORKSPACE_ID_PATTERN.test(e.name)).map((e) => e.name);
  }

  async exists(workspaceId: string): Promise<boolean> {
    await this.#o.volume();
    const info = await stat(this.#o.paths.workspace(workspaceId)).catch(() => null);
    return info?.isDirectory() === true;
  }

  /** The group of a workspace: its own when the project isolates workspaces, the project's otherwise. */
  async gidOf(workspaceId: string): Promise<number> {
    const record = await this.#o.record.read();
    if (!record.isolation) return workspaceGid(false, 0);
    const known = record.workspaces[workspaceId];
    const index = known ?? (await this.#o.record.update((r) => workspaceIndex(r, workspaceId)));
    return workspaceGid(true, index);
  }

  /** Every workspace group of the project (`container exec` is in all of them). */
  async gids(): Promise<number[]> {
    const record = await this.#o.record.read();
    if (!record.isolation) return [workspaceGid(false, 0)];
    return [...new Set(Object.values(record.workspaces).map((index) => workspaceGid(true, index)))];
  }

  /** Creates the workspace (idempotent: an existing one is left as it is, and `git` is null). */
  async create(
    workspaceId: string,
    options: {
      initGit: boolean;
      remoteUrl?: string | undefined;
      gitCredential?: string | undefined;
      /** Start this branch in it (the workspace of a session with a branch of its own). */
      branch?: WorkspaceBranch | undefined;
      git: HostGitSettings;
    },
  ): Promise<CreatedWorkspace> {
    const dir = this.#o.paths.workspace(workspaceId);
    const path = this.containerPath(workspaceId);
    await this.#o.volume();
    await mkdir(this.#o.paths.workspaces, { recursive: true });
    if (await this.exists(workspaceId)) return { path, git: null };
    let git: CreatedWorkspace["git"] = null;
    if (options.remoteUrl !== undefined) {
      await gitClone(options.remoteUrl, dir, options.git, options.gitCredential);
      git = "clone";
    } else {
      await mkdir(dir);
      if (options.initGit) {
        await gitInit(dir).catch(async (error: unknown) => {
          await rm(dir, { recursive: true, force: true });
          throw error;
        });
        git = "init";
      }
    }
    let branch: CreatedWorkspace["branch"];
    if (options.branch !== undefined) {
      if (git === null) {
        await rm(dir, { recursive: true, force: true });
        throw new HostError(
          "invalid",
          "a branch needs a git workspace: give the project remote_url or init_git",
        );
      }
      // Still the host's own repository: no agent has had it yet.
      const baseCommit = await gitStartBranch(dir, options.branch.name, options.branch.base).catch(
        async (error: unknown) => {
          await rm(dir, { recursive: true, force: true });
          throw error;
        },
      );
      branch = { name: options.branch.name, base_commit: baseCommit };
      await this.#o.record.update((record) => {
        record.branches = { ...record.branches, [workspaceId]: branch as NonNullable<typeof branch> };
      });
    }
    await claimTree(dir, this.#o.ownership, await this.gidOf(workspaceId));
    await claim(dir, await this.#owner(workspaceId));
    this.#o.logger.info({ workspace: workspaceId, git, branch: branch?.name }, "workspace created");
    return { path, git, ...(branch !== undefined ? { branch } : {}) };
  }

  /** The branch a workspace was started on and the commit it started from (what its diff compares with). */
  async branchOf(workspaceId: string): Promise<{ name: string; base_commit: string | null } | null> {
    return (await this.#o.record.read()).branches?.[workspaceId] ?? null;
  }

  /** Removes the workspace and everything in it (idempotent); never the default one. */
  async delete(workspaceId: string): Promise<void> {
    if (workspaceId === DEFAULT_WORKSPACE_ID) {
      throw new HostError(
        "invalid",
        "the default workspace belongs to the project; remove the project instead",
      );
    }
    await rm(this.#o.paths.workspace(workspaceId), { recursive: true, force: true });
    await this.#o.record.update((record) => {
      if (record.branches) delete record.branches[workspaceId];
    });
    this.#o.logger.info({ workspace: workspaceId }, "workspace deleted");
  }

  /** A listing or a file of the workspace, never anything outside it. */
  async read(
    workspaceId: string,
    path: string,
    kind: "dir" | "file",
    maxBytes: number,
  ): Promise<WorkspaceReadResult> {
    if (!(await this.exists(workspaceId)))
      throw new HostError("not_found", `workspace ${workspaceId} does not exist on this host`);
    return readWorkspace(this.#o.paths.workspace(workspaceId), path, kind, maxBytes);
  }

  async #owner(workspaceId: string) {
    return ownerOf(this.#o.ownership, { kind: "workspace", gid: await this.gidOf(workspaceId) });
  }
}

/** The workspace a container path is in (`<root>/<id>/…`), or "" when it is in none. */
export function workspaceOfPath(path: string, containerRoot: string): string {
  const rel = posix.relative(containerRoot, posix.normalize(path));
  const id = rel.split("/")[0] ?? "";
  return rel.startsWith("..") || !WORKSPACE_ID_PATTERN.test(id) ? "" : id;
}
