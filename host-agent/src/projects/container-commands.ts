/**
 * Commands in a project's running container: a user's (`container exec`, as the exec identity
 * with every workspace's group), the host's in one workspace (its git, as that workspace's session
 * with that workspace's group only: it reaches nothing the workspace's own agent could not), and
 * the container's logs.
 */
import { Identities } from "../../../protocol/container-layout.js";
import { npmEnvironment, proxyEnvironment } from "../../../protocol/egress.js";
import type {
  ContainerExecParams,
  ContainerExecResult,
  ContainerLogsParams,
  ContainerLogsResult,
} from "../../../protocol/tunnel-projects.js";
import type { ProjectNetwork } from "../egress/project-network.js";
import type { ExecIdentity, StdoutSink, Workload } from "../runtime/types.js";
import { HostError } from "./errors.js";
import type { ProjectSessions } from "./project-sessions.js";
import type { Workspaces } from "./workspaces.js";

export interface ContainerCommandsOptions {
  projectId: string;
  /** The running container (throws not_running when there is none). */
  workload(): Workload;
  workspaces: Workspaces;
  sessions: ProjectSessions;
  /** Whether commands run as uids of their own here (Docker). */
  separate: boolean;
  /** The project's side of the egress gate: a user's command's requests count as the project's. */
  network: ProjectNetwork;
  /** The runner's egress proxy port in the container (null: not known yet, or no proxy). */
  proxyPort(): number | null;
  /** The exec identity's home in the container (npm's cache lives there). */
  execHome: string;
}

/** The PATH of commands the host runs in the container (the images' own). */
const IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin";

export class ContainerCommands {
  readonly #o: ContainerCommandsOptions;

  constructor(options: ContainerCommandsOptions) {
    this.#o = options;
  }

  /** A user's command; with `stdout`, its output goes there as bytes (see StdoutSink). */
  async exec(
    params: ContainerExecParams,
    signal?: AbortSignal,
    stdout?: StdoutSink,
  ): Promise<ContainerExecResult> {
    const workload = this.#o.workload();
    const identity: ExecIdentity | undefined = this.#o.separate
      ? { uid: Identities.execUid, gid: Identities.projectGid, groups: await this.#o.workspaces.gids() }
      : undefined;
    return workload.exec(params, { signal, identity, stdout, env: this.execEnv(this.#o.network.execToken) });
  }

  /**
   * The environment of a command run as the exec identity: its home, npm's cache and prefix
   * there, and the container's proxy with `credential` (the exec credential, or a setup run's).
   */
  execEnv(credential: string): Record<string, string> {
    const port = this.#o.proxyPort();
    return {
      HOME: this.#o.execHome,
      ...npmEnvironment(this.#o.execHome, IMAGE_PATH),
      ...(port !== null ? proxyEnvironment(port, credential) : {}),
    };
  }

  /** A command in a workspace, as its session (the uid of one that runs in it, else the exec user). */
  async execInWorkspace(
    workspaceId: string,
    params: Omit<ContainerExecParams, "project_id" | "cwd">,
    stdout?: StdoutSink,
  ): Promise<ContainerExecResult> {
    const { workspaces, sessions, projectId } = this.#o;
    const workload = this.#o.workload();
    if (!(await workspaces.exists(workspaceId)))
      throw new HostError("not_found", `project ${projectId} has no workspace ${workspaceId} here`);
    let identity: ExecIdentity | undefined;
    if (this.#o.separate) {
      const gid = await workspaces.gidOf(workspaceId);
      identity = { uid: sessions.uidIn(workspaceId) ?? Identities.execUid, gid, groups: [gid] };
    }
    const cwd = workspaces.containerPath(workspaceId);
    return workload.exec({ ...params, project_id: projectId, cwd }, { identity, stdout });
  }

  /**
   * A setup step in a workspace: as the exec identity (every workspace's group), in the
   * workspace, with the proxy's setup credential (`credential`), its output seen as it comes.
   */
  async setupStep(
    workspaceId: string,
    argv: string[],
    options: {
      credential: string;
      timeoutMs: number;
      output: (stream: "stdout" | "stderr", chunk: Buffer) => void;
      signal?: AbortSignal;
    },
  ): Promise<ContainerExecResult> {
    const { workspaces, projectId } = this.#o;
    const workload = this.#o.workload();
    if (!(await workspaces.exists(workspaceId)))
      throw new HostError("not_found", `project ${projectId} has no workspace ${workspaceId} here`);
    const identity: ExecIdentity | undefined = this.#o.separate
      ? { uid: Identities.execUid, gid: await workspaces.gidOf(workspaceId), groups: await workspaces.gids() }
      : undefined;
    return workload.exec(
      {
        project_id: projectId,
        command: argv,
        cwd: workspaces.containerPath(workspaceId),
        timeout_ms: options.timeoutMs,
        output_limit_bytes: 1024,
      },
      { identity, env: this.execEnv(options.credential), output: options.output, signal: options.signal },
    );
  }

  logs(params: ContainerLogsParams): Promise<ContainerLogsResult> {
    return this.#o.workload().logs(params);
  }
}
