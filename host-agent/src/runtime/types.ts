import type { AgentRuntime as AgentRuntimeName } from "../../../protocol/agent-runtimes.js";
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
  /** Host directory of the agents' homes; mounted at /home/agents inside a container. */
  homesDir: string;
  /** Extra environment for the runner and its agents. */
  env: Record<string, string>;
  /** Docker only: image to run; the runtime's default image when absent. */
  image?: string | undefined;
  limits: ResolvedLimits;
  /** Each workspace has a group of its own (sessions of other workspaces cannot enter it). */
  isolation: boolean;
  /** Size of the container's in-memory /tmp (MiB); its root filesystem is read-only. */
  tmpMb: number;
  /** A project of its own for one session of a protocol-2 registry: removed with that session. */
  ephemeral: boolean;
  /** The agent runtime the project is made for: an image that is not ours gets that CLI mounted. */
  agent?: AgentRuntimeName | undefined;
  /** Hears how long work for the launch comes along (an image's pull), a line at a time. */
  onProgress?: ((message: string) => void) | undefined;
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
  exec(params: ContainerExecParams, options?: ExecOptions): Promise<ContainerExecResult>;
  /** Its output, both streams, newest lines last. */
  logs(params: ContainerLogsParams): Promise<ContainerLogsResult>;
  /** The image it was made from (Docker): its id, and whether it is one of ours. */
  readonly image?: { id: string; ours: boolean };
}

/**
 * Takes a command's stdout as it comes, bytes unchanged and uncapped by the exec's output limit
 * (the answer's `stdout` is then empty): for binary output such as a git bundle. The sink bounds it.
 */
export type StdoutSink = (chunk: Buffer) => void;

/** How a command runs: who as, with what environment added, where its stdout goes, when it is cancelled. */
export interface ExecOptions {
  signal?: AbortSignal | undefined;
  identity?: ExecIdentity | undefined;
  stdout?: StdoutSink | undefined;
  /** Added to the command's environment (the egress proxy, npm's home). */
  env?: Record<string, string> | undefined;
  /** Sees each chunk of output as it comes (the answer still carries what fits its limit). */
  output?: ((stream: "stdout" | "stderr", chunk: Buffer) => void) | undefined;
}

/** Who a user's command runs as in a container: never the runner, never a session. */
export interface ExecIdentity {
  uid: number;
  gid: number;
  /** Supplementary groups (every workspace's), so the command sees every workspace. */
  groups: number[];
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

/** Where a workload sees the project's socket directory, workspaces and homes. */
export interface WorkloadPaths {
  socketDir: string;
  workspaceRoot: string;
  homesRoot: string;
}

/** Runs project workloads: in Docker containers, or as local child processes (dev only). */
export interface AgentRuntime {
  readonly kind: RuntimeKind;
  /** Whether workloads outlive the host-agent (Docker: re-adopted after a restart) or end with it. */
  readonly survivesRestart: boolean;
  /** Whether workspaces can have groups of their own here (Docker, with a root host-agent). */
  readonly canIsolate: boolean;
  /** Whether sessions run as uids of their own (Docker: the runner is root and switches to them). */
  readonly separatesSessions: boolean;
  /** The socket directory, workspace root and homes as the workload sees them. */
  paths(launch: Pick<ProjectLaunch, "socketDir" | "workspacesDir" | "homesDir">): WorkloadPaths;
  launch(spec: ProjectLaunch): Promise<Workload>;
  /**
   * The running workloads of this host id that an earlier run left behind, to serve again; ones
   * that are no longer running are removed. Returns nothing for a runtime that does not survive.
   */
  adopt(): Promise<AdoptedProject[]>;
}
