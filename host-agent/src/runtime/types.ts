import type { Readable, Writable } from "node:stream";
import type { RuntimeKind } from "../../../protocol/tunnel.js";

/** What the host-agent asks a runtime to start for one session. */
export interface AgentLaunch {
  sessionId: string;
  /** Host directory that holds the session's relay.sock; mounted at /mcp inside a container. */
  socketDir: string;
  /**
   * Environment for the agent process. The runtime adds OUBLIETTE_SOCKET itself
   * (/mcp/relay.sock in a container, `${socketDir}/relay.sock` for a local process).
   */
  env: Record<string, string>;
  /** Docker only: image to run; the runtime's default image when absent. */
  image?: string;
}

export interface AgentExit {
  exitCode: number | null;
  signal: string | null;
}

/** A running agent process (a container's main process, or a local child process). */
export interface AgentProcess {
  /** Container id, or `pid:<n>` for a local process. */
  readonly id: string;
  /** The agent's stdin: the host-agent writes one JSON line per droid message. */
  readonly stdin: Writable;
  /** The agent's stdout: JSON lines become droid_output events. */
  readonly stdout: Readable;
  /** The agent's stderr: lines become droid_log events. */
  readonly stderr: Readable;
  /** Settles once, when the agent process ends (never rejects). */
  readonly exited: Promise<AgentExit>;
  /** Stops the agent (stdin end, then graceful stop, then forced) and removes its container. Idempotent. */
  stop(reason: string): Promise<void>;
}

/** Runs agent processes: in Docker containers, or as local child processes (dev only). */
export interface AgentRuntime {
  readonly kind: RuntimeKind;
  launch(spec: AgentLaunch): Promise<AgentProcess>;
  /** Removes agents an earlier run of this host-agent left behind; returns how many. */
  removeOrphans(): Promise<number>;
}
