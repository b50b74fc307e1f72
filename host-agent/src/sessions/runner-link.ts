/**
 * The host-agent's side of the runner: the container's main process, which owns the agent's
 * stdio and reconnects to whichever host-agent serves the socket. Through it the host-agent
 * starts the agent (once), writes droid messages (idempotent by seq), stops it, and acknowledges
 * the agent events the session object has stored.
 */
import type { Logger } from "../../../lib/log.js";
import type { AgentState } from "../../../protocol/agent-events.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  AgentMessageResultSchema,
  AgentStartResultSchema,
  AgentStopResultSchema,
  SocketMethod,
} from "../../../protocol/socket.js";
import type { ContainerConnection } from "../socket/container-connection.js";

export interface RunnerLinkOptions {
  logger: Logger;
  /** The agent failed to start (the session cannot go on). */
  onStartFailed(message: string): void;
}

export class RunnerLink {
  readonly #o: RunnerLinkOptions;
  #connection: ContainerConnection | null = null;
  #agent: AgentState | null = null;
  #ackedSeq = 0;
  #waiters = new Set<() => void>();

  constructor(options: RunnerLinkOptions) {
    this.#o = options;
  }

  get connected(): boolean {
    return this.#connection !== null;
  }

  /** A runner authenticated: it is the current one; start its agent if it has not been. */
  attach(connection: ContainerConnection, agent: AgentState): void {
    this.#connection = connection;
    this.#agent = agent;
    this.#o.logger.info({ agent: agent.status, delivered: agent.delivered_message_seq }, "runner connected");
    if (this.#ackedSeq > 0) connection.peer.notify(SocketMethod.agentEventsAck, { seq: this.#ackedSeq });
    if (agent.status === "idle") void this.#start(connection);
    for (const wake of [...this.#waiters]) wake();
  }

  detach(connection: ContainerConnection): void {
    if (this.#connection !== connection) return;
    this.#connection = null;
    this.#o.logger.info("runner disconnected");
  }

  /** The session object stored agent events up to `seq`: the runner may forget them. */
  ackEvents(seq: number): void {
    if (seq <= this.#ackedSeq) return;
    this.#ackedSeq = seq;
    this.#connection?.peer.notify(SocketMethod.agentEventsAck, { seq });
  }

  /** Writes droid message `seq` to the agent's stdin (waiting for a runner); idempotent by seq. */
  async deliver(seq: number, text: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const connection = this.#connection;
      if (!connection) {
        await this.#connected(signal);
        continue;
      }
      if ((this.#agent?.delivered_message_seq ?? 0) >= seq) return;
      try {
        const raw = await connection.peer.request(SocketMethod.agentMessage, { seq, text }, { signal });
        const result = AgentMessageResultSchema.parse(raw);
        if (this.#agent)
          this.#agent.delivered_message_seq = Math.max(
            this.#agent.delivered_message_seq,
            result.delivered_seq,
          );
        return;
      } catch (err) {
        if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) continue;
        throw err;
      }
    }
  }

  /** Asks the runner to stop the agent; resolves when it did, or after the grace when it cannot. */
  async stop(reason: string, graceMs: number): Promise<void> {
    const connection = this.#connection;
    if (!connection || this.#agent?.status === "exited") return;
    try {
      const raw = await connection.peer.request(
        SocketMethod.agentStop,
        { reason, grace_ms: graceMs },
        { timeoutMs: graceMs + 3_000 },
      );
      const exit = AgentStopResultSchema.parse(raw);
      this.#o.logger.info({ exit_code: exit.exit_code, signal: exit.signal }, "agent stopped");
    } catch (err) {
      this.#o.logger.warn({ err }, "the runner did not confirm the agent stopped");
    }
  }

  async #start(connection: ContainerConnection): Promise<void> {
    try {
      const raw = await connection.peer.request(SocketMethod.agentStart, {}, { timeoutMs: 30_000 });
      const started = AgentStartResultSchema.safeParse(raw);
      if (this.#agent) this.#agent.status = "running";
      this.#o.logger.info({ pid: started.success ? started.data.pid : null }, "agent started");
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) return; // retried on reconnect
      const message = err instanceof Error ? err.message : String(err);
      this.#o.logger.error({ err: message }, "the runner could not start the agent");
      this.#o.onStartFailed(message);
    }
  }

  #connected(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        this.#waiters.delete(done);
        reject(signal.reason);
      };
      this.#waiters.add(done);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
