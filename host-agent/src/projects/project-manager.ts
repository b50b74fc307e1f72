/**
 * The projects on this host and the sessions in them: what the host channel's requests act on.
 * It holds the host's capacity (`--max-projects` containers, `--max-sessions` sessions, and its
 * disk: no new work while the data disk is nearly full), refuses what this host cannot enforce
 * (workspace isolation without root, or under the process runtime), and finds the projects an
 * earlier run left behind.
 */
import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import type { Logger } from "../../../lib/log.js";
import { DEFAULT_WORKSPACE_ID, PROJECT_ID_PATTERN } from "../../../protocol/ids.js";
import type { NetworkBlocked } from "../../../protocol/network-activity.js";
import { type ProjectSpec, ProjectSpecSchema } from "../../../protocol/project.js";
import type { SetupResult } from "../../../protocol/setup.js";
import type { SessionStartParams } from "../../../protocol/tunnel.js";
import type {
  WorkspaceBranch,
  WorkspaceGitParams,
  WorkspaceGitResult,
} from "../../../protocol/tunnel-git.js";
import type {
  ContainerExecParams,
  ContainerExecResult,
  ContainerLogsParams,
  ContainerLogsResult,
  HostProject,
  WorkspaceReadResult,
  WorkspaceSetupParams,
} from "../../../protocol/tunnel-projects.js";
import type { DiskSettings } from "../disk/disk-settings.js";
import { checkHostDisk } from "../disk/host-disk.js";
import { defaultAddressPolicy } from "../egress/address-check.js";
import { EgressGate } from "../egress/egress-gate.js";
import { GitCredentials } from "../git/git-credentials.js";
import type { ProjectGit, PullRequestInput } from "../git/project-git.js";
import type { PushResult } from "../git/project-repo.js";
import type { ModelProxy } from "../models/model-proxy.js";
import type { AdoptedProject, AgentRuntime } from "../runtime/types.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { HostError } from "./errors.js";
import type { HostGitSettings } from "./git.js";
import type { OwnershipMode } from "./ownership.js";
import { ProjectPaths, projectsDir } from "./project-paths.js";
import { ProjectRuntime } from "./project-runtime.js";
import type { CreatedWorkspace } from "./workspaces.js";

export interface ProjectManagerOptions {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: AgentRuntime;
  /** Where project data (records, workspaces) lives: `<data-dir>/projects/<id>`. */
  dataDir: string;
  /** Where project sockets live: `<socket-dir>/<id>/relay.sock`. */
  socketRoot: string;
  maxSessions: number;
  maxProjects: number;
  /** The host's model proxy (keys stay in it). */
  models: ModelProxy;
  /** How projects' disk use is bounded here. */
  disk: DiskSettings;
  logger: Logger;
  timing?: TunnelTiming | undefined;
  /** Whether this process runs as root (it can give workspace directories to their uids). */
  isRoot?: boolean;
  /** What the host's git may reach and with which credentials (default: public https/ssh, none). */
  git?: HostGitSettings;
  /** The host's egress gate (default: the system resolver, public addresses only). */
  egress?: EgressGate;
}

/** Without settings: public https:// and ssh:// remotes, no credentials. */
const DEFAULT_HOST_GIT: HostGitSettings = {
  policy: { allowLocal: false },
  credentials: new GitCredentials(),
};

/** Most project directories `host_hello` reports. */
const MAX_REPORTED_PROJECTS = 10_000;

export class ProjectManager {
  readonly #o: ProjectManagerOptions;
  readonly #projects = new Map<string, ProjectRuntime>();
  /** Which project each running session is in. */
  readonly #sessions = new Map<string, string>();
  readonly #ownership: OwnershipMode;
  readonly #egress: EgressGate;
  /** Where a user's command's or a setup's refused connection is reported (the host channel sets it). */
  onNetworkBlocked: (projectId: string, who: "exec" | "setup", event: NetworkBlocked) => void = () => {};

  constructor(options: ProjectManagerOptions) {
    this.#o = options;
    this.#egress =
      options.egress ?? new EgressGate({ addresses: defaultAddressPolicy(), logger: options.logger });
    const isRoot = options.isRoot ?? process.getuid?.() === 0;
    this.#ownership = options.runtime.kind === "process" ? "own" : isRoot ? "root" : "open";
  }

  /** Sessions running on this host. */
  running(): string[] {
    return [...this.#sessions.keys()];
  }

  /** Project containers this host has (running) and project volumes it keeps (not running). */
  async projects(): Promise<HostProject[]> {
    const found = new Map<string, boolean>();
    for (const [id, project] of this.#projects) found.set(id, project.running);
    const dirs = await readdir(projectsDir(this.#o.dataDir)).catch(() => []);
    for (const name of dirs.slice(0, MAX_REPORTED_PROJECTS)) {
      if (PROJECT_ID_PATTERN.test(name) && !found.has(name)) found.set(name, false);
    }
    return [...found].map(([project_id, running]) => ({ project_id, running }));
  }

  /** The project's runtime here (made on first use: its volume may exist from an earlier run). */
  project(projectId: string): ProjectRuntime {
    let project = this.#projects.get(projectId);
    if (!project) {
      project = new ProjectRuntime({
        projectId,
        models: this.#o.models,
        egress: this.#egress,
        onNetworkBlocked: (who, event) => this.onNetworkBlocked(projectId, who, event),
        paths: new ProjectPaths(this.#o.dataDir, this.#o.socketRoot, projectId),
        runtime: this.#o.runtime,
        ownership: this.#ownership,
        disk: this.#o.disk,
        workerUrl: this.#o.workerUrl,
        hostToken: this.#o.hostToken,
        hostId: this.#o.hostId,
        logger: this.#o.logger,
        timing: this.#o.timing,
        git: this.#o.git ?? DEFAULT_HOST_GIT,
        onSessionOpened: (sessionId) => this.#sessions.set(sessionId, projectId),
        onSessionClosed: (sessionId) => this.#sessions.delete(sessionId),
        onRemoved: (id) => this.#projects.delete(id),
      });
      this.#projects.set(projectId, project);
    }
    return project;
  }

  async ensureProject(
    projectId: string,
    spec: ProjectSpec,
    ephemeral = false,
    onProgress?: (message: string) => void,
  ) {
    this.#checkIsolation(spec);
    const project = this.project(projectId);
    if (!project.running) {
      await checkHostDisk(this.#o.dataDir, this.#o.disk.minFreeMb);
      const running = [...this.#projects.values()].filter((p) => p.running).length;
      if (running >= this.#o.maxProjects) {
        throw new HostError(
          "host_full",
          `this host already runs ${running} of ${this.#o.maxProjects} project containers`,
        );
      }
    }
    return project.ensure(spec, ephemeral, onProgress);
  }

  async stopProject(projectId: string, reason: string): Promise<void> {
    await this.#projects.get(projectId)?.stop(reason);
  }

  async removeProject(projectId: string): Promise<void> {
    await this.project(projectId).remove();
  }

  async refreshProject(
    projectId: string,
    spec: ProjectSpec,
    onProgress?: (message: string) => void,
  ): Promise<{ containerId: string }> {
    this.#checkIsolation(spec);
    return this.project(projectId).refresh(spec, onProgress);
  }

  async createWorkspace(
    projectId: string,
    workspaceId: string,
    options: {
      initGit: boolean;
      remoteUrl?: string | undefined;
      gitCredential?: string | undefined;
      branch?: WorkspaceBranch | undefined;
      diskMb?: number | undefined;
    },
  ): Promise<CreatedWorkspace> {
    await checkHostDisk(this.#o.dataDir, this.#o.disk.minFreeMb);
    const project = this.project(projectId);
    await project.prepareVolume(options.diskMb);
    return project.workspaces.create(workspaceId, { ...options, git: this.#o.git ?? DEFAULT_HOST_GIT });
  }

  async deleteWorkspace(projectId: string, workspaceId: string): Promise<void> {
    const project = this.project(projectId);
    if (workspaceId === DEFAULT_WORKSPACE_ID) {
      throw new HostError(
        "invalid",
        "the default workspace belongs to the project; remove the project instead",
      );
    }
    if (project.usesWorkspace(workspaceId))
      throw new HostError("busy", `a running session works in workspace ${workspaceId}; stop it first`);
    await project.workspaces.delete(workspaceId);
  }

  /** The git of a project here (docs/git.md). */
  git(projectId: string): ProjectGit {
    return this.#existing(projectId).git;
  }

  /** Pushes a workspace's branch to a remote, through the project's own repository here. */
  async pushWorkspace(
    projectId: string,
    workspaceId: string,
    push: { branch?: string | undefined; remoteUrl: string; credential?: string | undefined },
  ): Promise<PushResult> {
    const git = this.git(projectId);
    const branch = push.branch ?? (await git.branchOf(workspaceId));
    return git.push(workspaceId, {
      src: branch,
      dst: branch,
      remoteUrl: push.remoteUrl,
      credential: push.credential,
    });
  }

  workspaceGit(params: WorkspaceGitParams): Promise<WorkspaceGitResult> {
    return this.git(params.project_id).workspace(params);
  }

  pullRequest(projectId: string, input: PullRequestInput) {
    return this.git(projectId).pullRequest(input);
  }

  readWorkspace(
    projectId: string,
    workspaceId: string,
    path: string,
    kind: "dir" | "file",
    maxBytes: number,
  ): Promise<WorkspaceReadResult> {
    return this.project(projectId).workspaces.read(workspaceId, path, kind, maxBytes);
  }

  /** Runs the project's setup in a workspace now (`workspace setup`); its container must run. */
  async setupWorkspace(params: WorkspaceSetupParams): Promise<SetupResult> {
    const project = this.#existing(params.project_id);
    if (!project.running) throw new HostError("not_running", "the project's container is not running");
    if (!(await project.workspaces.exists(params.workspace_id)))
      throw new HostError(
        "not_found",
        `project ${params.project_id} has no workspace ${params.workspace_id} here`,
      );
    return project.runSetup(params.workspace_id, { steps: params.steps, timeout_ms: params.timeout_ms });
  }

  /** The project's network policies changed: its gate applies them now (and remembers them). */
  async setNetwork(
    projectId: string,
    network: ProjectSpec["network"],
    setupNetwork: ProjectSpec["setup_network"],
  ) {
    await this.project(projectId).setNetwork({ network, setup_network: setupNetwork });
  }

  /** Runs a user's command in the project's container; `signal` (the Worker cancelled it) kills it. */
  exec(params: ContainerExecParams, signal?: AbortSignal): Promise<ContainerExecResult> {
    return this.#existing(params.project_id).commands.exec(params, signal);
  }

  logs(params: ContainerLogsParams): Promise<ContainerLogsResult> {
    return this.#existing(params.project_id).commands.logs(params);
  }

  /**
   * Ensures the session's project container, then starts its agent there. A protocol-2 registry
   * names no project: the session gets one of its own, removed with it.
   */
  async startSession(params: SessionStartParams): Promise<void> {
    if (this.#sessions.has(params.session_id)) return;
    if (this.#sessions.size >= this.#o.maxSessions) {
      throw new HostError(
        "host_full",
        `this host already runs ${this.#sessions.size} of ${this.#o.maxSessions} sessions`,
      );
    }
    await checkHostDisk(this.#o.dataDir, this.#o.disk.minFreeMb);
    const ephemeral = params.project_id === undefined;
    const projectId = params.project_id ?? ownProjectId(params.session_id);
    const spec = params.project ?? ProjectSpecSchema.parse({ image: params.spec.image });
    await this.ensureProject(projectId, spec, ephemeral);
    // Reserved before the agent starts, so concurrent starts cannot overshoot the limit.
    this.#sessions.set(params.session_id, projectId);
    try {
      await this.project(projectId).startSession(
        params.session_id,
        params.workspace_id,
        { ...params.spec.env },
        params.spec.agent,
        params.git,
        params.spec.network,
        params.setup,
      );
    } catch (err) {
      this.#sessions.delete(params.session_id);
      throw err;
    }
  }

  /** Stops a session's agent; stopping one this host does not run is not an error (it already ended). */
  async stopSession(sessionId: string, reason: string): Promise<void> {
    const projectId = this.#sessions.get(sessionId);
    if (projectId !== undefined) await this.#projects.get(projectId)?.stopSession(sessionId, reason);
  }

  reconnectTunnels(): void {
    for (const project of this.#projects.values()) project.reconnectTunnels();
  }

  /** Serves again the project containers an earlier run left running, and their sessions. */
  async adopt(adopted: readonly AdoptedProject[]): Promise<void> {
    await Promise.all(
      adopted.map(async (entry) => {
        await this.project(entry.projectId).adopt(entry);
      }),
    );
  }

  /**
   * The host-agent is stopping. Containers that survive it are left running for the next run to
   * re-adopt; the others (process runtime) stop, their sessions telling their objects why.
   */
  async shutdown(reason: string): Promise<void> {
    const projects = [...this.#projects.values()];
    if (this.#o.runtime.survivesRestart) await Promise.all(projects.map((p) => p.detach()));
    else await Promise.all(projects.map((p) => p.stop(reason)));
  }

  #existing(projectId: string): ProjectRuntime {
    const project = this.#projects.get(projectId);
    if (!project) throw new HostError("not_running", `project ${projectId} has no container on this host`);
    return project;
  }

  #checkIsolation(spec: ProjectSpec): void {
    if (!spec.workspace_isolation) return;
    if (!this.#o.runtime.canIsolate || this.#ownership !== "root") {
      throw new HostError(
        "unsupported",
        this.#o.runtime.kind === "process"
          ? "workspace isolation needs the Docker runtime; this host runs droids as local processes"
          : "workspace isolation needs a host-agent running as root (it gives each workspace its own uid)",
      );
    }
  }
}

/** The project of its own a protocol-2 session gets: `prj_` + the session's hex digits. */
export function ownProjectId(sessionId: string): string {
  const hex = sessionId.slice("ses_".length);
  return /^[0-9a-f]{24}$/.test(hex)
    ? `prj_${hex}`
    : `prj_${createHash("sha256").update(sessionId).digest("hex").slice(0, 24)}`;
}
