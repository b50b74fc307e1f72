import type { RuntimeKind } from "../../../protocol/tunnel.js";

/** What the host-agent asks a runtime to start for one session. */
export interface WorkloadLaunch {
  sessionId: string;
  /** The session's secret: the runner and container-client present it in `hello`. */
  sessionToken: string;
  /** Host directory that holds the session's relay.sock; mounted at /mcp inside a container. */
  socketDir: string;
  /** Extra environment for the runner and its agent. */
  env: Record<string, string>;
  /** Docker only: image to run; the runtime's default image when absent. */
  image?: string;
}

export interface WorkloadExit {
  exitCode: number | null;
  signal: string | null;
}

/**
 * A session's workload: a container (or, under the process runtime, a local process) whose main
 * process is the runner. The host-agent never holds its stdio: the runner talks over the socket.
 */
export interface Workload {
  /** Container id, or `pid:<n>` for a local process. */
  readonly id: string;
  /** Settles once, when the workload ends (never rejects). */
  readonly exited: Promise<WorkloadExit>;
  /** Stops it (SIGTERM, then SIGKILL after the grace) and removes it. Idempotent. */
  stop(reason: string): Promise<void>;
}

/** A workload an earlier run of this host-agent left running, ready to be served again. */
export interface AdoptedWorkload {
  sessionId: string;
  sessionToken: string;
  socketDir: string;
  workload: Workload;
}

/** Runs workloads: in Docker containers, or as local child processes (dev only). */
export interface AgentRuntime {
  readonly kind: RuntimeKind;
  /** Whether workloads outlive the host-agent (Docker: re-adopted after a restart) or end with it. */
  readonly survivesRestart: boolean;
  launch(spec: WorkloadLaunch): Promise<Workload>;
  /**
   * The running workloads of this host id that an earlier run left behind, to serve again; ones
   * that are no longer running are removed. Returns nothing for a runtime that does not survive.
   */
  adopt(): Promise<AdoptedWorkload[]>;
}
