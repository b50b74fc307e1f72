/**
 * One session's agent as the runner keeps it: the process (started once), the droid messages
 * written to it (each seq once), and its numbered events, kept (bounded) until the host-agent
 * says the session object stored them. The slot outlives the process until its last event, the
 * one reporting the end, is stored; then the runner forgets it.
 */
import type { Logger } from "../../../lib/log.js";
import type { AgentEvent, AgentEventBody } from "../../../protocol/agent-events.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { RunnerAgent } from "../../../protocol/socket.js";
import { prepareHome } from "./agent-home.js";
import type { PreparedLaunch } from "./agent-launch.js";
import { type AgentExit, AgentProcess } from "./agent-process.js";
import { EventBuffer } from "./event-buffer.js";

export interface AgentSlotOptions {
  sessionId: string;
  sessionToken: string;
  /** How to run the agent: its adapter and launch, decided by the runner (see agent-launch.ts). */
  launch: PreparedLaunch;
  env: Record<string, string>;
  cwd: string;
  uid?: number | undefined;
  gid?: number | undefined;
  logger: Logger;
  /** Fresh events of this agent, to send now when connected (they stay buffered until acked anyway). */
  send(events: AgentEvent[]): void;
  /** One stderr line of the agent, for the runner's own output (what `docker logs` shows). */
  echo(line: string): void;
}

/** Per agent; many agents share one runner, so each buffer is smaller than a lone agent's was. */
const BUFFER_LIMITS = { maxEvents: 10_000, maxBytes: 8 * 1024 * 1024 };

export class AgentSlot {
  readonly #o: AgentSlotOptions;
  readonly #events = new EventBuffer(BUFFER_LIMITS);
  #agent: AgentProcess | null = null;
  #starting: Promise<AgentProcess> | null = null;
  #exit: AgentExit | null = null;
  /** The seq of the event that reports the agent's end; once stored, the slot is done. */
  #exitSeq: number | null = null;
  /** Messages that arrived while the agent was starting. */
  #early: { seq: number; text: string; resolve(): void; reject(err: Error): void }[] = [];
  /** Events of this tick, sent together. */
  #outgoing: AgentEvent[] = [];

  constructor(options: AgentSlotOptions) {
    this.#o = options;
  }

  get sessionId(): string {
    return this.#o.sessionId;
  }

  get sessionToken(): string {
    return this.#o.sessionToken;
  }

  /** The uid the agent runs as (none: the runner's own, under the process runtime). */
  get uid(): number | undefined {
    return this.#o.uid;
  }

  get running(): boolean {
    return this.#agent?.running === true;
  }

  /** The agent ended and the session object stored that: the runner may forget this slot. */
  get done(): boolean {
    return this.#exitSeq !== null && this.#events.acked >= this.#exitSeq;
  }

  /** Unacknowledged events, oldest first (re-sent after every reconnect). */
  pending(): AgentEvent[] {
    return this.#events.pending();
  }

  /** What `hello` reports of this agent. */
  state(): RunnerAgent {
    const status = this.#exit ? "exited" : this.#agent || this.#starting ? "running" : "idle";
    return {
      session_id: this.#o.sessionId,
      session_token: this.#o.sessionToken,
      status,
      exit_code: this.#exit?.exitCode ?? null,
      signal: this.#exit?.signal ?? null,
      delivered_message_seq: this.#agent?.deliveredSeq ?? 0,
      ...(this.#o.launch.modelToken !== undefined ? { model_token: this.#o.launch.modelToken } : {}),
      ...(this.#o.uid !== undefined ? { uid: this.#o.uid } : {}),
      ...(this.#o.gid !== undefined ? { gid: this.#o.gid } : {}),
    };
  }

  /** Starts the agent once; a second call gets the same process. */
  start(): Promise<AgentProcess> {
    if (this.#agent) return Promise.resolve(this.#agent);
    if (this.#exit) return Promise.reject(ended("the agent already ended"));
    const { driver, launch, home } = this.#o.launch;
    this.#starting ??= prepareHome(home, launch.files, this.#o.uid, this.#o.gid)
      .then(() =>
        AgentProcess.start({
          argv: launch.argv,
          driver,
          env: { ...this.#o.env, ...launch.env },
          cwd: this.#o.cwd,
          uid: this.#o.uid,
          gid: this.#o.gid,
          logger: this.#o.logger,
          onEvent: (event) => this.#emit(event),
        }),
      )
      .then(
        (agent) => {
          this.#agent = agent;
          this.#o.logger.info({ pid: agent.pid, cwd: this.#o.cwd, uid: this.#o.uid }, "agent started");
          this.#emit({ type: "droid_status", status: "running" });
          void agent.exited.then((exit) => this.#ended(exit));
          for (const m of this.#early.splice(0)) agent.deliver(m.seq, m.text).then(m.resolve, m.reject);
          return agent;
        },
        (err: Error) => {
          this.#starting = null;
          this.#exit = { exitCode: null, signal: null };
          this.#exitSeq = this.#emit({ type: "droid_status", status: "failed", message: err.message });
          throw new RpcError(RpcErrorCode.ServerError, err.message, { reason: "runtime_error" });
        },
      );
    return this.#starting;
  }

  /** Writes droid message `seq` once (waiting for a starting agent). */
  async deliver(seq: number, text: string): Promise<number> {
    const agent = this.#agent;
    if (agent) {
      await agent.deliver(seq, text);
      return agent.deliveredSeq;
    }
    if (this.#exit) throw ended("the agent has ended");
    await new Promise<void>((resolve, reject) => this.#early.push({ seq, text, resolve, reject }));
    return this.#agent?.deliveredSeq ?? seq;
  }

  /** Interrupts the agent's turn in flight; false when there is no running agent to interrupt. */
  async interrupt(): Promise<boolean> {
    const agent = this.#agent;
    if (!agent?.running) return false;
    await agent.interrupt();
    this.#o.logger.info("turn interrupted");
    return true;
  }

  /** Ends the agent in steps (idempotent); resolves with how it ended. */
  async stop(graceMs: number): Promise<AgentExit> {
    if (this.#agent) return this.#agent.stop(graceMs);
    if (this.#starting) {
      const agent = await this.#starting.catch(() => null);
      if (agent) return agent.stop(graceMs);
    }
    return this.#exit ?? { exitCode: null, signal: null };
  }

  /** The session object stored events up to `seq`. */
  ack(seq: number): void {
    this.#events.ack(seq);
  }

  #ended(exit: AgentExit): void {
    this.#exit = exit;
    this.#o.logger.info({ exit_code: exit.exitCode, signal: exit.signal }, "agent exited");
    for (const m of this.#early.splice(0)) m.reject(new Error("the agent has ended"));
    this.#exitSeq = this.#emit({ type: "droid_status", status: "exited", exit_code: exit.exitCode });
  }

  /** Keeps an event and sends it soon (events of one tick go together); returns its seq. */
  #emit(body: AgentEventBody): number {
    if (body.type === "droid_log") this.#o.echo(body.text);
    const fresh = this.#events.push(body);
    this.#outgoing.push(...fresh);
    if (this.#outgoing.length === fresh.length) {
      queueMicrotask(() => this.#o.send(this.#outgoing.splice(0)));
    }
    return fresh.at(-1)?.seq ?? 0;
  }
}

function ended(message: string): RpcError {
  return new RpcError(RpcErrorCode.ServerError, message, { reason: "session_ended" });
}
