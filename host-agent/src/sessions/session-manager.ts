import type { SessionSpec } from "../../../protocol/tunnel.js";
import type { SessionControl } from "../tunnel/host-control.js";
import { SessionRuntime, type SessionRuntimeOptions } from "./session-runtime.js";

/** What every session on this host shares, plus the host's session limit. */
export interface SessionManagerOptions
  extends Omit<SessionRuntimeOptions, "sessionId" | "spec" | "onClosed"> {
  maxSessions: number;
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
      throw new Error(`this host already runs ${this.#o.maxSessions} sessions`);
    }
    const session = new SessionRuntime({
      ...this.#o,
      sessionId,
      spec,
      onClosed: (id) => this.#sessions.delete(id),
    });
    this.#sessions.set(sessionId, session);
    try {
      await session.start();
    } catch (err) {
      this.#sessions.delete(sessionId);
      throw err;
    }
  }

  /** Stops a session; stopping one this host does not run is not an error (it already ended). */
  async stop(sessionId: string, reason: string): Promise<void> {
    await this.#sessions.get(sessionId)?.stop(reason);
  }

  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((s) => s.stop(reason)));
  }
}
