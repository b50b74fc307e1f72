/**
 * A project's workspaces on this host: directories in its volume, each with the owner its
 * container needs (see ownership.ts), the `default` one made with the project. Creating one may
 * run git for it (on the host, which has the network); deleting one removes it with everything
 * in it. The record of workspace uids is kept in `project.json`.
 */
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { posix } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { DEFAULT_WORKSPACE_ID, WORKSPACE_ID_PATTERN } from "../../../protocol/ids.js";
import type { WorkspaceReadResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "./errors.js";
import { gitClone, gitInit } from "./git.js";
import { claim, claimTree, type OwnershipMode, rootOwner, workspaceOwner } from "./ownership.js";
import type { ProjectPaths } from "./project-paths.js";
import { ISOLATED_UID_BASE, indexOf, readRecord, writeRecord } from "./project-record.js";
import { readWorkspace } from "./workspace-read.js";

export interface WorkspacesOptions {
  paths: ProjectPaths;
  ownership: OwnershipMode;
  /** /workspace as the project's workload sees it. */
  containerRoot: string;
  logger: Logger;
}

export interface CreatedWorkspace {
  path: string;
  git: "init" | "clone" | null;
}

export class Workspaces {
  readonly #o: WorkspacesOptions;
  /** One change of the record at a time (uids are allocated from it). */
  #recordChain: Promise<unknown> = Promise.resolve();

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
    await mkdir(paths.workspaces, { recursive: true });
    await this.#updateRecord(async (record) => {
      record.isolation = isolation;
    });
    await claim(paths.workspaces, rootOwner(this.#o.ownership, isolation));
    await mkdir(paths.workspace(DEFAULT_WORKSPACE_ID), { recursive: true });
    for (const id of await this.list()) await claim(paths.workspace(id), await this.#owner(id));
  }

  /** Workspace ids present on this host. */
  async list(): Promise<string[]> {
    const entries = await readdir(this.#o.paths.workspaces, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory() && WORKSPACE_ID_PATTERN.test(e.name)).map((e) => e.name);
  }

  async exists(workspaceId: string): Promise<boolean> {
    const info = await stat(this.#o.paths.workspace(workspaceId)).catch(() => null);
    return info?.isDirectory() === true;
  }

  /** The uid the agents of a workspace run as, when the project isolates workspaces. */
  async uidOf(workspaceId: string): Promise<number | null> {
    const record = await readRecord(this.#o.paths.record);
    if (!record.isolation) return null;
    let index = record.workspaces[workspaceId];
    if (index === undefined) {
      await this.#updateRecord(async (r) => {
        index = indexOf(r, workspaceId);
      });
    }
    return ISOLATED_UID_BASE + (index ?? 0);
  }

  /** Creates the workspace (idempotent: an existing one is left as it is, and `git` is null). */
  async create(
    workspaceId: string,
    options: { initGit: boolean; remoteUrl?: string | undefined },
  ): Promise<CreatedWorkspace> {
    const dir = this.#o.paths.workspace(workspaceId);
    const path = this.containerPath(workspaceId);
    await mkdir(this.#o.paths.workspaces, { recursive: true });
    if (await this.exists(workspaceId)) return { path, git: null };
    let git: CreatedWorkspace["git"] = null;
    if (options.remoteUrl !== undefined) {
      await gitClone(options.remoteUrl, dir);
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
    const owner = await this.#owner(workspaceId);
    await claimTree(dir, owner);
    await claim(dir, owner);
    this.#o.logger.info({ workspace: workspaceId, git }, "workspace created");
    return { path, git };
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
    return workspaceOwner(this.#o.ownership, await this.uidOf(workspaceId));
  }

  #updateRecord(change: (record: Awaited<ReturnType<typeof readRecord>>) => Promise<void>): Promise<void> {
    const next = this.#recordChain.then(async () => {
      await mkdir(this.#o.paths.root, { recursive: true });
      const record = await readRecord(this.#o.paths.record);
      await change(record);
      await writeRecord(this.#o.paths.record, record);
    });
    this.#recordChain = next.catch(() => {});
    return next;
  }
}
