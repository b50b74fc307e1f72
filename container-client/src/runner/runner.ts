/**
 * The runner: the container's main process and the only thing in it that talks to the
 * host-agent about the agent. It starts the agent when the host-agent asks, owns its stdio,
 * writes droid messages to it (each seq once), and streams its events with sequence numbers,
 * keeping them until the session object has stored them. Nothing here depends on the host-agent
 * being alive: while it is away the agent runs on and events wait (bounded); a restarted
 * host-agent gets our hello (with the agent's state) and everything not yet acknowledged.
 */
import type { Logger } from "../../../lib/log.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import {
  type AgentEvent,
  type AgentEventBody,
  type AgentState,
  batchEvents,
} from "../../../protocol/agent-events.js";
import { Limits, MAX_ENVELOPE_BYTES } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  AgentEventsAckParamsSchema,
  AgentMessageParamsSchema,
  AgentStartParamsSchema,
  AgentStopParamsSchema,
  SocketMethod,
} from "../../../protocol/socket.js";
import { SocketSession } from "../socket/socket-session.js";
import { type AgentExit, AgentProcess } from "./agent-process.js";
import { EventBuffer } from "./event-buffer.js";

export interface RunnerOptions {
  socketPath: string;
  sessionToken: string;
  agentCommand: string[];
  agentEnv: Record<string, string>;
  logger: Logger;
  /** The runner is done (the agent ended and its last events are stored): exit with this code. */
  onDone(code: number): void;
}

export class Runner {
  readonly #o: RunnerOptions;
  readonly #log: Logger;
  readonly #session: SocketSession;
  readonly #events = new EventBuffer();
  #agent: AgentProcess | null = null;
  #starting: Promise<AgentProcess> | null = null;
  #exit: AgentExit | null = null;
  /** The seq of the event that reports the agent's end; once stored, the runner is done. */
  #exitSeq: number | null = null;
  /** Messages that arrived while the agent was starting. */
  #early: { seq: number; text: string; resolve(): void; reject(err: Error): void }[] = [];
  /** Events of this tick, sent together. */
  #outgoing: AgentEvent[] = [];

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.#log = options.logger;
    this.#session = new SocketSession({
      socketPath: options.socketPath,
      logger: this.#log,
      hello: () => ({ session_token: options.sessionToken, role: "runner", agent: this.#state() }),
      serve: (peer) => this.#serve(peer),
      connected: (peer) => this.#flush(peer, this.#events.pending()),
      rejected: (message) => {
        this.#log.fatal({ message }, "the host-agent rejected the session token; stopping the agent");
        void this.shutdown("the session token was rejected", 5_000);
      },
    });
  }

  start(): void {
    this.#session.start();
  }

  /** Ends the agent (if running), gives its last events a moment to be stored, and finishes. */
  async shutdown(reason: string, graceMs: number): Promise<void> {
    this.#log.info({ reason }, "runner shutting down");
    if (this.#agent?.running) await this.#agent.stop(graceMs);
    const deadline = Date.now() + 2_000;
    while (this.#events.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.#session.close();
    this.#o.onDone(this.#exit?.exitCode ?? 0);
  }

  #state(): AgentState {
    const status = this.#exit ? "exited" : this.#agent || this.#starting ? "running" : "idle";
    return {
      status,
      exit_code: this.#exit?.exitCode ?? null,
      signal: this.#exit?.signal ?? null,
      delivered_message_seq: this.#agent?.deliveredSeq ?? 0,
    };
  }

  #serve(peer: RpcPeer): void {
    peer.handle(SocketMethod.agentStart, AgentStartParamsSchema, async () => {
      const agent = await this.#startAgent();
      return { pid: agent.pid };
    });
    peer.handle(SocketMethod.agentMessage, AgentMessageParamsSchema, async (params) => {
      await this.#deliver(params.seq, params.text);
      return { delivered_seq: this.#agent?.deliveredSeq ?? 0 };
    });
    peer.handle(SocketMethod.agentStop, AgentStopParamsSchema, async (params) => {
      this.#log.info({ reason: params.reason }, "asked to stop the agent");
      const exit = this.#agent
        ? await this.#agent.stop(params.grace_ms)
        : (this.#exit ?? { exitCode: null, signal: null });
      return { exit_code: exit.exitCode, signal: exit.signal };
    });
    peer.onNotification(SocketMethod.agentEventsAck, AgentEventsAckParamsSchema, (params) => {
      this.#events.ack(params.seq);
      if (this.#exitSeq !== null && params.seq >= this.#exitSeq) {
        this.#log.info("the agent's end is stored; the runner is done");
        void this.#session.close().then(() => this.#o.onDone(this.#exit?.exitCode ?? 0));
      }
    });
  }

  #startAgent(): Promise<AgentProcess> {
    if (this.#agent) return Promise.resolve(this.#agent);
    if (this.#exit)
      return Promise.reject(
        new RpcError(RpcErrorCode.ServerError, "the agent already ended", { reason: "session_ended" }),
      );
    this.#starting ??= AgentProcess.start({
      command: this.#o.agentCommand,
      env: this.#o.agentEnv,
      logger: this.#log,
      onEvent: (event) => this.#emit(event),
    }).then(
      (agent) => {
        this.#agent = agent;
        this.#log.info({ pid: agent.pid, command: this.#o.agentCommand }, "agent started");
        this.#emit({ type: "droid_status", status: "running" });
        void agent.exited.then((exit) => this.#ended(exit));
        for (const m of this.#early.splice(0))
          agent.deliver({ type: "message", seq: m.seq, text: m.text }).then(m.resolve, m.reject);
        return agent;
      },
      (err: Error) => {
        this.#starting = null;
        this.#exit = { exitCode: null, signal: null };
        const event = this.#emit({ type: "droid_status", status: "failed", message: err.message });
        this.#exitSeq = event;
        throw new RpcError(RpcErrorCode.ServerError, err.message, { reason: "runtime_error" });
      },
    );
    return this.#starting;
  }

  async #deliver(seq: number, text: string): Promise<void> {
    const agent = this.#agent;
    if (agent) return agent.deliver({ type: "message", seq, text });
    if (this.#exit)
      throw new RpcError(RpcErrorCode.ServerError, "the agent has ended", { reason: "session_ended" });
    await new Promise<void>((resolve, reject) => this.#early.push({ seq, text, resolve, reject }));
  }

  #ended(exit: AgentExit): void {
    this.#exit = exit;
    this.#log.info({ exit_code: exit.exitCode, signal: exit.signal }, "agent exited");
    for (const m of this.#early.splice(0)) m.reject(new Error("the agent has ended"));
    this.#exitSeq = this.#emit({ type: "droid_status", status: "exited", exit_code: exit.exitCode });
  }

  /** Keeps an event and sends it soon if connected (events of one tick go together); returns its seq. */
  #emit(body: AgentEventBody): number {
    const fresh = this.#events.push(body);
    this.#outgoing.push(...fresh);
    if (this.#outgoing.length === fresh.length) {
      queueMicrotask(() => {
        const peer = this.#session.peer;
        const events = this.#outgoing.splice(0);
        if (peer) this.#flush(peer, events);
      });
    }
    return fresh.at(-1)?.seq ?? 0;
  }

  #flush(peer: RpcPeer, events: readonly AgentEvent[]): void {
    for (const batch of batchEvents(events, Limits.lineBytes - MAX_ENVELOPE_BYTES)) {
      peer.notify(SocketMethod.agentEvents, { events: batch });
    }
  }
}
