/**
 * The host-agent's side of one project container's runner: the container's main process, which
 * owns every agent's stdio and reconnects to whichever host-agent serves the socket. Through it
 * the host-agent starts a session's agent, writes droid messages (idempotent by seq), stops
 * agents, and acknowledges each session's events once its session object has stored them. All
 * of it is keyed by session id; the runner's hello says where each agent is.
 *
 * A container has one runner: while one is connected a second is refused, and a connected one
 * that stops answering pings is dropped, so its reconnect (or its replacement) takes over and a
 * session's messages never go to a runner that is not there.
 */
import type { Logger } from "../../../lib/log.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { type AgentStartParams, type RunnerAgent, SocketMethods } from "../../../protocol/socket.js";

/** The runner's loopback ports, from its hello. */
export type RunnerPorts = { egress?: number | undefined; model?: number | undefined };

import type { ContainerConnection } from "../socket/container-connection.js";

export interface RunnerLinkOptions {
  logger: Logger;
  /** How often the runner is pinged, and how long it has to answer; default 5 s and 10 s. */
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
  /** A runner connected and reported these agents (a restarted host-agent re-adopts their sessions). */
  onAgents(agents: RunnerAgent[]): void;
}

/** How long starting an agent waits for the runner to connect (a fresh container takes a moment). */
const CONNECT_WAIT_MS = 30_000;

export class RunnerLink {
  readonly #o: RunnerLinkOptions;
  #connection: ContainerConnection | null = null;
  /** Highest droid message seq the runner wrote, per session. */
  readonly #delivered = new Map<string, number>();
  /** Highest event seq acknowledged, per session (re-sent to a reconnected runner). */
  readonly #acked = new Map<string, number>();
  #waiters = new Set<() => void>();
  /** The runner's loopback ports in the container, as its latest hello said. */
  #ports: { egress?: number | undefined; model?: number | undefined } = {};
  #pinger: NodeJS.Timeout | null = null;

  constructor(options: RunnerLinkOptions) {
    this.#o = options;
  }

  get connected(): boolean {
    return this.#connection !== null;
  }

  /** Whether a runner presenting the right secret may be the runner now: null, or why not. */
  admit(connection: ContainerConnection): string | null {
    const current = this.#connection;
    if (current === null || current === connection) return null;
    return "this container's runner is already connected; a second runner is refused";
  }

  /** The runner's egress proxy and model forwarder ports (unknown until it said hello). */
  get ports(): { egress?: number | undefined; model?: number | undefined } {
    return this.#ports;
  }

  /** A runner authenticated: it is the current one. */
  attach(connection: ContainerConnection, agents: RunnerAgent[], ports: RunnerPorts = {}): void {
    this.#connection = connection;
    this.#ports = ports;
    this.#startPinging(connection);
    for (const agent of agents) {
      this.#delivered.set(
        agent.session_id,
        Math.max(this.#delivered.get(agent.session_id) ?? 0, agent.delivered_message_seq),
      );
    }
    this.#o.logger.info({ agents: agents.length }, "runner connected");
    for (const [sessionId, seq] of this.#acked)
      connection.peer.notify(SocketMethods.agentEventsAck, { session_id: sessionId, seq });
    this.#o.onAgents(agents);
    for (const wake of [...this.#waiters]) wake();
  }

  detach(connection: ContainerConnection): void {
    if (this.#connection !== connection) return;
    this.#connection = null;
    this.#stopPinging();
    this.#o.logger.info("runner disconnected");
  }

  /** Stops watching the runner (the container is going). */
  close(): void {
    this.#stopPinging();
  }

  #startPinging(connection: ContainerConnection): void {
    this.#stopPinging();
    const interval = this.#o.pingIntervalMs ?? 5_000;
    const timeoutMs = this.#o.pingTimeoutMs ?? 10_000;
    const round = async () => {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        await connection.peer.request(SocketMethods.ping, {}, { signal });
      } catch (err) {
        if (this.#connection !== connection) return;
        if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) return;
        // Any answer, even "no such method", is a runner that is there.
        if (!signal.aborted) return this.#schedulePing(round, interval);
        this.#o.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "the runner stopped answering; dropping its connection so it can reconnect",
        );
        connection.destroy();
        return;
      }
      if (this.#connection === connection) this.#schedulePing(round, interval);
    };
    this.#schedulePing(round, interval);
  }

  #schedulePing(round: () => Promise<void>, interval: number): void {
    this.#pinger = setTimeout(() => void round(), interval);
    this.#pinger.unref();
  }

  #stopPinging(): void {
    if (this.#pinger !== null) clearTimeout(this.#pinger);
    this.#pinger = null;
  }

  /** Waits for a runner (true) or gives up after `timeoutMs` (false). */
  async waitConnected(timeoutMs: number): Promise<boolean> {
    if (this.#connection) return true;
    const signal = AbortSignal.timeout(timeoutMs);
    return this.#connected(signal).then(
      () => true,
      () => false,
    );
  }

  /** Starts a session's agent (idempotent at the runner); resolves with its pid. */
  async startAgent(params: AgentStartParams): Promise<number> {
    const signal = AbortSignal.timeout(CONNECT_WAIT_MS);
    for (;;) {
      const connection = this.#connection;
      if (!connection) {
        await this.#connected(signal).catch(() => {
          throw new Error(`the container's runner did not connect within ${CONNECT_WAIT_MS / 1000} s`);
        });
        continue;
      }
      try {
        const started = await connection.peer.request(SocketMethods.agentStart, params, {
          timeoutMs: 30_000,
        });
        return started.pid;
      } catch (err) {
        if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) continue;
        throw err;
      }
    }
  }

  /** Interrupts a session's turn in flight; false when no runner is connected or no agent runs. */
  async interruptAgent(sessionId: string): Promise<boolean> {
    const connection = this.#connection;
    if (!connection) return false;
    const answer = await connection.peer.request(
      SocketMethods.agentInterrupt,
      { session_id: sessionId },
      { timeoutMs: 10_000 },
    );
    return answer.interrupted;
  }

  /** The session object stored a session's events up to `seq`: the runner may forget them. */
  ackEvents(sessionId: string, seq: number): void {
    if (seq <= (this.#acked.get(sessionId) ?? 0)) return;
    this.#acked.set(sessionId, seq);
    this.#connection?.peer.notify(SocketMethods.agentEventsAck, { session_id: sessionId, seq });
  }

  /** The session is over here: forget what was kept for it. */
  forget(sessionId: string): void {
    this.#acked.delete(sessionId);
    this.#delivered.delete(sessionId);
  }

  /** Writes droid message `seq` to a session's agent (waiting for a runner); idempotent by seq. */
  async deliver(sessionId: string, seq: number, text: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const connection = this.#connection;
      if (!connection) {
        await this.#connected(signal);
        continue;
      }
      if ((this.#delivered.get(sessionId) ?? 0) >= seq) return;
      try {
        const result = await connection.peer.request(
          SocketMethods.agentMessage,
          { session_id: sessionId, seq, text },
          { signal },
        );
        this.#delivered.set(sessionId, Math.max(this.#delivered.get(sessionId) ?? 0, result.delivered_seq));
        return;
      } catch (err) {
        if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) continue;
        throw err;
      }
    }
  }

  /** Asks the runner to stop a session's agent; resolves when it did, or after the grace when it cannot. */
  async stopAgent(sessionId: string, reason: string, graceMs: number): Promise<void> {
    const connection = this.#connection;
    if (!connection) return;
    try {
      const exit = await connection.peer.request(
        SocketMethods.agentStop,
        { session_id: sessionId, reason, grace_ms: graceMs },
        { timeoutMs: graceMs + 3_000 },
      );
      this.#o.logger.info(
        { session: sessionId, exit_code: exit.exit_code, signal: exit.signal },
        "agent stopped",
      );
    } catch (err) {
      this.#o.logger.warn({ session: sessionId, err }, "the runner did not confirm the agent stopped");
    }
  }

  #connected(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
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
