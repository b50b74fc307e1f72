/**
 * One session's agent as the runner keeps it: the process (started once, and started again
 * after a crash), the droid messages written to it (each seq once, across restarts), and its
 * numbered events, kept (bounded) until the host-agent says the session object stored them.
 *
 * An agent that ends without being asked to (a crash, the kernel's OOM killer, a CLI bug) does
 * not end the session: the turn it was in fails with a clear error, an `agent_restarted` event
 * says how it ended and what it last wrote on stderr, and a new process takes the conversation
 * up with the CLI's own resume mechanism (the dead driver's `conversationId`). Past the restart
 * limit (RESTARTS within RESTART_WINDOW_MS) the slot gives up and the session fails, saying why.
 * An agent ended for want of memory (by the kernel, or first by the runner's memory guard) is not
 * started again — it would fill the memory again — and the session fails saying so, with the
 * limit; a process the agent started that the guard ended is told to the session as an error.
 * The slot outlives the process until its last event, the one reporting the end, is stored; then
 * the runner forgets it.
 *
 * The agent's permission questions (its driver's `asks`) go to the session through the runner
 * (`approval-asks.ts`), each under an approval id of its own; the decision is written back only
 * to the process that asked, if it still runs. A question whose process ended, or whose slot is
 * stopping, is settled (deny, by "ended") and cancelled at the host-agent.
 */
import type { Logger } from "../../../lib/log.js";
import type { AgentEvent, AgentEventBody } from "../../../protocol/agent-events.js";
import type { ApprovalDecision } from "../../../protocol/approvals.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { RunnerAgent } from "../../../protocol/socket.js";
import type { PermissionAsk } from "../agents/driver.js";
import { prepareHome } from "./agent-home.js";
import type { PreparedLaunch } from "./agent-launch.js";
import { type AgentExit, AgentProcess } from "./agent-process.js";
import type { ApprovalAsks } from "./approval-asks.js";
import { EventBuffer } from "./event-buffer.js";
import { describeExit, ordinal } from "./exit-words.js";
import { describeVictim, type MemoryVictim } from "./memory-guard.js";
import { oomKills } from "./oom-kills.js";
import { refuseHazards } from "./workspace-hazards.js";

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
  /** Where the agent's permission questions go (the runner's, over its socket session). */
  approvals: Pick<ApprovalAsks, "ask" | "end">;
  /** The agent's proxy credential (reported in `hello`, so a restarted host-agent's gate knows it). */
  proxyToken?: string | undefined;
  /** Restart policy (tests shorten it); default 3 restarts within 2 minutes, 1 s apart and more. */
  restarts?: { max: number; windowMs: number; delayMs: number };
}

/** Per agent; many agents share one runner, so each buffer is smaller than a lone agent's was. */
const BUFFER_LIMITS = { maxEvents: 10_000, maxBytes: 8 * 1024 * 1024 };
const DEFAULT_RESTARTS = { max: 3, windowMs: 120_000, delayMs: 1_000 };
/** The last stderr lines an `agent_restarted` event carries. */
const STDERR_TAIL = 12;
const STDERR_LINE_CHARS = 512;

export class AgentSlot {
  readonly #o: AgentSlotOptions;
  readonly #policy: { max: number; windowMs: number; delayMs: number };
  readonly #events = new EventBuffer(BUFFER_LIMITS);
  #agent: AgentProcess | null = null;
  #starting: Promise<AgentProcess> | null = null;
  /** Set once the agent is over for good (asked to stop, ended on purpose, failed, gave up). */
  #exit: AgentExit | null = null;
  /** The seq of the event that reports the agent's end; once stored, the slot is done. */
  #exitSeq: number | null = null;
  #stopping = false;
  /** Messages that arrived while the agent was (re)starting. */
  #early: { seq: number; text: string; resolve(): void; reject(err: Error): void }[] = [];
  /** Events of this tick, sent together. */
  #outgoing: AgentEvent[] = [];
  /** The last droid message written, across processes. */
  #deliveredSeq = 0;
  /** Droid messages written whose turn has not completed. */
  readonly #openTurns = new Set<number>();
  /** When the agent was restarted lately (within the window). */
  #restarts: number[] = [];
  readonly #stderr: string[] = [];
  #oomBaseline: number | null = null;
  /** Why the memory guard ended the agent's process (set just before that process ends). */
  #memoryEnd: { pid: number; words: string } | null = null;
  /** Permission questions not decided yet, by approval id, with the process that asked. */
  readonly #asks = new Map<string, AgentProcess>();
  /** The approval id each question was asked under. */
  readonly #askIds = new WeakMap<PermissionAsk, string>();

  constructor(options: AgentSlotOptions) {
    this.#o = options;
    this.#policy = options.restarts ?? DEFAULT_RESTARTS;
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

  /**
   * The memory guard ended `victim`, a process of this session's uid: the agent itself (its end
   * will say why) or something it started (the session hears of it now).
   */
  memoryEnded(victim: MemoryVictim): void {
    const words = describeVictim(victim);
    if (this.#agent !== null && victim.process.pid === this.#agent.pid) {
      this.#memoryEnd = { pid: victim.process.pid, words };
      return;
    }
    this.#emit({ type: "error", message: `a process the agent started was ended: ${words}` });
  }

  /** The agent ended and the session object stored that: the runner may forget this slot. */
  get done(): boolean {
    return this.#exitSeq !== null && this.#events.acked >= this.#exitSeq;
  }

  /** Unacknowledged events, oldest first (re-sent after every reconnect). */
  pending(): AgentEvent[] {
    return this.#events.pending();
  }

  /** What `hello` reports of this agent (a restarting agent is still running). */
  state(): RunnerAgent {
    const status = this.#exit ? "exited" : this.#agent || this.#starting ? "running" : "idle";
    return {
      session_id: this.#o.sessionId,
      runtime: this.#o.launch.runtime,
      session_token: this.#o.sessionToken,
      status,
      exit_code: this.#exit?.exitCode ?? null,
      signal: this.#exit?.signal ?? null,
      delivered_message_seq: this.#deliveredSeq,
      ...(this.#o.launch.modelToken !== undefined ? { model_token: this.#o.launch.modelToken } : {}),
      ...(this.#o.proxyToken !== undefined ? { proxy_token: this.#o.proxyToken } : {}),
      ...(this.#o.uid !== undefined ? { uid: this.#o.uid } : {}),
      ...(this.#o.gid !== undefined ? { gid: this.#o.gid } : {}),
    };
  }

  /** Starts the agent once; a second call gets the same process. */
  start(): Promise<AgentProcess> {
    if (this.#agent) return Promise.resolve(this.#agent);
    if (this.#exit) return Promise.reject(ended("the agent already ended"));
    this.#starting ??= this.#launch(undefined).then(
      (agent) => {
        this.#emit({ type: "droid_status", status: "running" });
        return agent;
      },
      (err: Error) => {
        this.#starting = null;
        // One wording for event and answer; a refusal's own reason (a hazard: unsupported) is kept.
        const message = `the agent could not start: ${err.message}`;
        this.#finish({ exitCode: null, signal: null }, { type: "droid_status", status: "failed", message });
        const data = (err instanceof RpcError ? err.data : undefined) ?? { reason: "runtime_error" };
        throw new RpcError(RpcErrorCode.ServerError, message, data);
      },
    );
    return this.#starting;
  }

  /** Writes droid message `seq` once (waiting for a starting or restarting agent). */
  async deliver(seq: number, text: string): Promise<number> {
    if (seq <= this.#deliveredSeq) return this.#deliveredSeq;
    const agent = this.#agent;
    if (agent) {
      await this.#write(agent, seq, text);
      return this.#deliveredSeq;
    }
    if (this.#exit) throw ended("the agent has ended");
    await new Promise<void>((resolve, reject) => this.#early.push({ seq, text, resolve, reject }));
    return Math.max(this.#deliveredSeq, seq);
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
    this.#stopping = true;
    this.#endAsks(null, "the agent was stopped");
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

  /** Starts one process of the agent (resuming `resume`), and watches it. */
  async #launch(resume: string | undefined): Promise<AgentProcess> {
    const { driver, launch } = this.#o.launch.build(resume);
    refuseHazards(this.#o.launch.runtime, this.#o.cwd, launch.hazards ?? []);
    await prepareHome(
      this.#o.launch.home,
      launch.files,
      launch.keep ?? [],
      this.#o.uid,
      this.#o.gid,
      launch.clear,
    );
    this.#oomBaseline = await oomKills();
    const agent = await AgentProcess.start({
      argv: launch.argv,
      driver,
      env: { ...this.#o.env, ...launch.env },
      cwd: this.#o.cwd,
      uid: this.#o.uid,
      gid: this.#o.gid,
      logger: this.#o.logger,
      deliveredSeq: this.#deliveredSeq,
      onEvent: (event) => this.#emit(event),
      onAsks: (asks, asker) => this.#asked(asker, asks),
      onWithdrawn: (asks) => this.#withdrawn(asks),
    });
    this.#agent = agent;
    this.#starting = null;
    this.#o.logger.info({ pid: agent.pid, cwd: this.#o.cwd, uid: this.#o.uid, resume }, "agent started");
    void agent.exited.then((exit) => void this.#ended(agent, exit));
    for (const m of this.#early.splice(0)) this.#write(agent, m.seq, m.text).then(m.resolve, m.reject);
    return agent;
  }

  async #write(agent: AgentProcess, seq: number, text: string): Promise<void> {
    await agent.deliver(seq, text);
    this.#deliveredSeq = Math.max(this.#deliveredSeq, seq);
    this.#openTurns.add(seq);
  }

  /** Puts each question of process `agent` to the session; its decision goes back to that process only. */
  #asked(agent: AgentProcess, asks: readonly PermissionAsk[]): void {
    for (const ask of asks) {
      if (this.#stopping) {
        this.#o.logger.info({ kind: ask.request.kind }, "a permission question while stopping; not asked");
        continue;
      }
      const { approvalId, decision } = this.#o.approvals.ask(
        this.#o.sessionId,
        this.#o.launch.runtime,
        ask.request,
      );
      this.#asks.set(approvalId, agent);
      this.#askIds.set(ask, approvalId);
      void decision.then((d) => this.#decided(approvalId, agent, ask, d));
    }
  }

  /** Questions the agent took back: ended at the session (a deny by "ended" nobody waits for). */
  #withdrawn(asks: readonly PermissionAsk[]): void {
    for (const ask of asks) {
      const approvalId = this.#askIds.get(ask);
      if (approvalId === undefined || !this.#asks.delete(approvalId)) continue;
      this.#o.approvals.end(approvalId, "the agent took its question back");
    }
  }

  async #decided(
    approvalId: string,
    agent: AgentProcess,
    ask: PermissionAsk,
    decision: ApprovalDecision,
  ): Promise<void> {
    this.#asks.delete(approvalId);
    const log = this.#o.logger.child({ approval_id: approvalId });
    if (this.#stopping || this.#agent !== agent || !agent.running) {
      log.info(
        { decision: decision.decision, by: decision.by },
        "decision dropped: the agent that asked is gone",
      );
      return;
    }
    try {
      if (!(await agent.answer(ask.answer(decision))))
        log.info({ decision: decision.decision }, "decision dropped: the agent that asked is gone");
    } catch (err) {
      log.warn({ err: (err as Error).message }, "could not answer the agent's permission question");
    }
  }

  /** Settles the questions of process `agent` (every process: null) and cancels them at the host-agent. */
  #endAsks(agent: AgentProcess | null, why: string): void {
    for (const [approvalId, asker] of [...this.#asks]) {
      if (agent !== null && asker !== agent) continue;
      this.#asks.delete(approvalId);
      this.#o.approvals.end(approvalId, why);
    }
  }

  async #ended(agent: AgentProcess, exit: AgentExit): Promise<void> {
    this.#endAsks(agent, "the agent process that asked has ended");
    if (this.#agent !== agent) return;
    this.#agent = null;
    this.#o.logger.info({ exit_code: exit.exitCode, signal: exit.signal }, "agent exited");
    // What it started (a CLI that re-launches itself, its MCP server) goes with it: its process group.
    agent.killGroup();
    const crashed = !this.#stopping && (agent.driver.crashed?.(exit) ?? true);
    if (!crashed) {
      this.#finish(exit, { type: "droid_status", status: "exited", exit_code: exit.exitCode });
      return;
    }
    const now = Date.now();
    this.#restarts = this.#restarts.filter((at) => now - at < this.#policy.windowMs);
    const guarded = this.#memoryEnd?.pid === agent.pid ? this.#memoryEnd.words : null;
    const how = guarded !== null ? `was ended (${guarded})` : await describeExit(exit, this.#oomBaseline);
    this.#failOpenTurns(how);
    if (guarded !== null || how.includes("out of memory")) {
      // Started again it would fill the memory again, and take the project's other sessions with it.
      const message = `the agent ${how}; it is not started again${this.#stderrNote()}`;
      this.#finish(exit, { type: "droid_status", status: "failed", exit_code: exit.exitCode, message });
      return;
    }
    if (this.#restarts.length >= this.#policy.max) {
      const message =
        `the agent ${how} — its ${ordinal(this.#restarts.length + 1)} unexpected end within ` +
        `${Math.round(this.#policy.windowMs / 1000)} s; it is not started again${this.#stderrNote()}`;
      this.#finish(exit, { type: "droid_status", status: "failed", exit_code: exit.exitCode, message });
      return;
    }
    this.#restarts.push(now);
    const resume = agent.driver.conversationId?.();
    this.#emit({
      type: "agent_restarted",
      exit_code: exit.exitCode,
      signal: exit.signal,
      stderr: [...this.#stderr],
      restarts: this.#restarts.length,
      resumed: resume !== undefined,
      message:
        `the agent ${how}; it is started again` +
        (resume !== undefined
          ? " and takes its conversation up"
          : " with a new conversation (none to resume yet)"),
    });
    const delay = this.#policy.delayMs * this.#restarts.length;
    this.#starting = new Promise<void>((resolve) => setTimeout(resolve, delay)).then(() => {
      if (this.#stopping) throw ended("the agent was stopped while restarting");
      return this.#launch(resume);
    });
    this.#starting.catch((err: Error) => {
      this.#starting = null;
      if (this.#stopping)
        this.#finish(exit, { type: "droid_status", status: "exited", exit_code: exit.exitCode });
      else
        this.#finish(exit, {
          type: "droid_status",
          status: "failed",
          message: `the agent could not be started again: ${err.message}`,
        });
    });
  }

  /** Every turn the dead process was in ends as failed, saying so. */
  #failOpenTurns(how: string): void {
    for (const seq of [...this.#openTurns].sort((a, b) => a - b)) {
      this.#emit({
        type: "error",
        message: `the agent ${how} during the turn of message ${seq}: that turn is lost`,
      });
      this.#emit({ type: "completion", message_seq: seq, stop_reason: "error" });
    }
    this.#openTurns.clear();
  }

  /** The agent is over for good: `event` says how; nothing waits for it any more. */
  #finish(exit: AgentExit, event: AgentEventBody): void {
    if (this.#exit) return;
    this.#exit = exit;
    for (const m of this.#early.splice(0)) m.reject(new Error("the agent has ended"));
    this.#exitSeq = this.#emit(event);
  }

  #stderrNote(): string {
    const last = this.#stderr.slice(-3);
    return last.length > 0 ? `; its last stderr lines: ${last.join(" | ")}` : "";
  }

  /** Keeps an event and sends it soon (events of one tick go together); returns its seq. */
  #emit(body: AgentEventBody): number {
    if (body.type === "droid_log") {
      this.#o.echo(body.text);
      this.#stderr.push(body.text.slice(0, STDERR_LINE_CHARS));
      if (this.#stderr.length > STDERR_TAIL) this.#stderr.shift();
    }
    if (body.type === "completion" && body.message_seq !== undefined)
      this.#openTurns.delete(body.message_seq);
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
