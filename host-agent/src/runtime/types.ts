import type { RuntimeKind } from "../../../protocol/tunnel.js";
import type {
  ContainerExecParams,
  ContainerExecResult,
  ContainerLogsParams,
  ContainerLogsResult,
} from "../../../protocol/tunnel-projects.js";

/** Resource limits of a project's container, with the host's defaults filled in. */
export interface ResolvedLimits {
  memoryMb: number;
  cpus: number;
  pids: number;
}

/** What the host-agent asks a runtime to start for one project. */
export interface ProjectLaunch {
  projectId: string;
  /** The container's secret: its runner presents it in `hello`. Never given to an agent. */
  runnerToken: string;
  /** Host directory that holds the project's relay.sock; mounted at /mcp inside a container. */
  socketDir: string;
  /** Host directory of the project's workspaces; mounted at /workspace inside a container. */
  workspacesDir: string;
  /** Extra environment for the runner and its agents. */
  env: Record<string, string>;
  /** Docker only: image to run; the runtime's default image when absent. */
  image?: string | undefined;
  limits: ResolvedLimits;
  /** Agents run as per-workspace uids: the runner runs as root with only SETUID/SETGID. */
  isolation: boolean;
  /** A project of its own for one session of a protocol-2 registry: removed with that session. */
  ephemeral: boolean;
}

export interface WorkloadExit {
  exitCode: number | null;
  signal: string | null;
}

/**
 * A project's workload: a container (or, under the process runtime, a local process) whose main
 * process is the runner. The host-agent never holds its stdio: the runner talks over the socket.
 */
export interface Workload {
  /** Container id, or `pid:<n>` for a local process. */
  readonly id: string;
  /** Settles once, when the workload ends (never rejects). */
  readonly exited: Promise<WorkloadExit>;
  /** Stops it (SIGTERM, then SIGKILL after the grace) and removes it. Idempotent. */
  stop(reason: string): Promise<void>;
  /**
   * Runs a user's command (argv) in it; throws HostError("not_running"/"exec_failed"/"invalid").
   * An aborted `signal` kills the command as its timeout would.
   */
  exec(params: ContainerExecParams, signal?: AbortSignal): Promise<ContainerExecResult>;
  /** Its output, both streams, newest lines last. */
  logs(params: ContainerLogsParams): Promise<ContainerLogsResult>;
}

/** A project container an earlier run of this host-agent left running, ready to be served again. */
export interface AdoptedProject {
  projectId: string;
  runnerToken: string;
  socketDir: string;
  isolation: boolean;
  ephemeral: boolean;
  workload: Workload;
}

/** Where a workload sees the project's socket and workspaces. */
export interface WorkloadPaths {
  socketPath: string;
  workspaceRoot: string;
}

/** Runs project workloads: in Docker containers, or as local child processes (dev only). */
export interface AgentRuntime {
  readonly kind: RuntimeKind;
  /** Whether workloads outlive the host-agent (Docker: re-adopted after a restart) or end with it. */
  readonly survivesRestart: boolean;
  /** Whether agents can run as per-workspace uids here (Docker, with a root host-agent). */
  readonly canIsolate: boolean;
  /** The socket and workspace root as the workload sees them. */
  paths(launch: Pick<ProjectLaunch, "socketDir" | "workspacesDir">): WorkloadPaths;
  launch(spec: ProjectLaunch): Promise<Workload>;
  /**
   * The running workloads of this host id that an earlier run left behind, to serve again; ones
   * that are no longer running are removed. Returns nothing for a runtime that does not survive.
   */
  adopt(): Promise<AdoptedProject[]>;
}
