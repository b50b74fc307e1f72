import type { SessionSpec } from "../../../protocol/tunnel.js";
import type { AdoptedWorkload } from "../runtime/types.js";
import type { SessionControl } from "../tunnel/host-control.js";
import { SessionRuntime, type SessionRuntimeOptions } from "./session-runtime.js";

/** What every session on this host shares, plus the host's session limit. */
export interface SessionManagerOptions extends Omit<SessionRuntimeOptions, "sessionId" | "onClosed"> {
  maxSessions: number;
}

/** This host is full: a spawn must go elsewhere. */
export class HostFullError extends Error {
  override readonly name = "HostFullError";
  readonly code = "host_full";
}

/** The sessions running on this host. */
export class SessionManager implements SessionControl {
  readonly #o: SessionManagerOptions;
  readonly #sessions = new Map<string, SessionRuntime>();

  constructor(options: SessionManagerOptions) {
    this.#o = options;
  }

  running(): string[] {
    return [...this.#sessions.keys()];
  }

  get(sessionId: string): SessionRuntime | undefined {
    return this.#sessions.get(sessionId);
  }

  async start(sessionId: string, spec: SessionSpec): Promise<void> {
    if (this.#sessions.has(sessionId)) return;
    if (this.#sessions.size >= this.#o.maxSessions) {
      throw new HostFullError(
        `this host already runs ${this.#sessions.size} of ${this.#o.maxSessions} sessions`,
      );
    }
    const session = this.#create(sessionId);
    try {
      await session.start(spec);
    } catch (err) {
      this.#sessions.delete(sessionId);
      throw err;
    }
  }

  /** Serves again the workloads an earlier run of this host left running. */
  async adopt(workloads: readonly AdoptedWorkload[]): Promise<void> {
    for (const adopted of workloads) {
      const session = this.#create(adopted.sessionId, adopted);
      await session.adopt(adopted.workload);
    }
  }

  /** Stops a session; stopping one this host does not run is not an error (it already ended). */
  async stop(sessionId: string, reason: string): Promise<void> {
    await this.#sessions.get(sessionId)?.stop(reason);
  }

  reconnectTunnels(): void {
    for (const session of this.#sessions.values()) session.reconnectTunnel();
  }

  /**
   * The host-agent is stopping. Workloads that survive it are left running for the next run to
   * re-adopt; the others (process runtime) end cleanly, telling their session objects why.
   */
  async shutdown(reason: string): Promise<void> {
    const sessions = [...this.#sessions.values()];
    if (this.#o.runtime.survivesRestart) await Promise.all(sessions.map((s) => s.detach()));
    else await Promise.all(sessions.map((s) => s.end(reason)));
  }

  #create(sessionId: string, existing?: { sessionToken: string; socketDir: string }): SessionRuntime {
    const session = new SessionRuntime(
      { ...this.#o, sessionId, onClosed: (id) => this.#sessions.delete(id) },
      existing,
    );
    this.#sessions.set(sessionId, session);
    return session;
  }
}
