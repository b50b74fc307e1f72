/**
 * The runner: the container's main process and the only thing in it that talks to the
 * host-agent about agents. A project's container runs many sessions, so the runner runs many
 * agents, one per session id: it starts each when the host-agent asks (as the workspace's uid
 * when isolation is on), owns its stdio, writes droid messages to it (each seq once), and
 * streams its events with sequence numbers per session, keeping them until that session's object
 * has stored them. One agent ending never ends the runner: it lives as long as the container.
 * Nothing here depends on the host-agent being alive: while it is away the agents run on and
 * events wait (bounded); a restarted host-agent gets our hello, naming every agent with its
 * session's secret (so it can serve that session again), and everything not yet acknowledged.
 * Agents' permission questions go to the host-agent as `approval` requests (`approval-asks.ts`),
 * re-sent under the same approval id after every reconnect until decided.
 */
import type { Logger } from "../../../lib/log.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { type AgentEvent, batchEvents } from "../../../protocol/agent-events.js";
import { CONTAINER_GIT_ENV, Identities } from "../../../protocol/container-layout.js";
import { type EgressPeer, npmEnvironment, proxyEnvironment } from "../../../protocol/egress.js";
import { Limits, MAX_ENVELOPE_BYTES } from "../../../protocol/limits.js";
import { API_KEY_ENV } from "../../../protocol/oubliette-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  AgentEnv,
  AgentLaunchSpecSchema,
  type AgentStartParams,
  MAX_AGENTS_PER_RUNNER,
  SocketMethods,
} from "../../../protocol/socket.js";
import { SocketSession } from "../socket/socket-session.js";
import { type LaunchSettings, prepareLaunch } from "./agent-launch.js";
import { AgentSlot } from "./agent-slot.js";
import { ApprovalAsks } from "./approval-asks.js";
import type { MemoryVictim } from "./memory-guard.js";
import { killUidProcesses } from "./uid-sweep.js";

export interface RunnerOptions {
  socketPath: string;
  /** The container's secret (role `runner`). */
  runnerToken: string;
  /** How agents are launched (the scripted command, the MCP server, the model forwarder, homes). */
  launch: LaunchSettings;
  /** The environment every agent starts from (the runner's, minus what only it may see). */
  agentEnv: Record<string, string>;
  /** Every agent must run as a uid of its own (a container): an agent_start without one is refused. */
  separateSessions?: boolean;
  /** The runner's ports in the container (its egress proxy, its model forwarder), told to the host-agent. */
  ports?: () => { egress?: number; model?: number };
  logger: Logger;
  /** Writes one line to the runner's own output (an agent's stderr, prefixed with its session). */
  echo?(line: string): void;
  /** The runner is done (shut down, or its secret was rejected): exit with this code. */
  onDone(code: number): void;
}

export class Runner {
  readonly #o: RunnerOptions;
  readonly #log: Logger;
  readonly #session: SocketSession;
  readonly #slots = new Map<string, AgentSlot>();
  readonly #approvals: ApprovalAsks;

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.#log = options.logger;
    this.#approvals = new ApprovalAsks({ peer: () => this.#session.peer, logger: this.#log });
    this.#session = new SocketSession({
      socketPath: options.socketPath,
      logger: this.#log,
      hello: () => ({
        role: "runner",
        runner_token: options.runnerToken,
        agents: [...this.#slots.values()].map((slot) => slot.state()),
        ...(options.ports ? { ports: options.ports() } : {}),
      }),
      serve: (peer) => this.#serve(peer),
      connected: (peer) => {
        for (const slot of this.#slots.values()) this.#flush(peer, slot.sessionId, slot.pending());
        this.#approvals.resend(peer);
      },
      rejected: (message) => {
        this.#log.fatal({ message }, "the host-agent rejected the runner's secret; stopping every agent");
        void this.shutdown("the runner's secret was rejected", 5_000);
      },
    });
  }

  start(): void {
    this.#session.start();
  }

  /**
   * Who a uid is, for the egress proxy: a running session's agent (and what it started), the
   * exec identity, or nobody known. Without separate uids (the process runtime) nobody is known
   * by uid: the proxy credential alone says who.
   */
  egressPeer(uid: number | null): EgressPeer {
    if (!this.#o.separateSessions || uid === null) return { kind: "unknown", uid };
    if (uid === Identities.execUid) return { kind: "exec" };
    for (const slot of this.#slots.values())
      if (slot.uid === uid && !slot.done) return { kind: "session", session_id: slot.sessionId };
    return { kind: "unknown", uid };
  }

  /** The memory guard ended a process: its session (the one whose uid it ran as) hears why. */
  memoryEnded(victim: MemoryVictim): void {
    const { uid, pid } = victim.process;
    const slot = [...this.#slots.values()].find((s) => s.uid === uid && !s.done);
    if (slot) slot.memoryEnded(victim);
    else this.#log.warn({ uid, pid }, "the memory guard ended a process of no session (a command's)");
  }

  /** Sessions whose agents the runner keeps (running, or ended with events not yet stored). */
  get sessions(): string[] {
    return [...this.#slots.keys()];
  }

  /** Ends every agent, gives their last events a moment to be stored, and finishes. */
  async shutdown(reason: string, graceMs: number): Promise<void> {
    this.#log.info({ reason, agents: this.#slots.size }, "runner shutting down");
    await Promise.all([...this.#slots.values()].map((slot) => slot.stop(graceMs)));
    const deadline = Date.now() + 2_000;
    while ([...this.#slots.values()].some((s) => s.pending().length > 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    await this.#session.close();
    this.#o.onDone(0);
  }

  #serve(peer: RpcPeer): void {
    // The host-agent's liveness check: a runner that stops answering is replaced.
    peer.handle(SocketMethods.ping, () => ({}));
    peer.handle(SocketMethods.agentStart, async (params) => {
      const agent = await this.#slotFor(params).start();
      return { pid: agent.pid };
    });
    peer.handle(SocketMethods.agentMessage, async (params) => {
      const slot = this.#known(params.session_id);
      return { delivered_seq: await slot.deliver(params.seq, params.text) };
    });
    peer.handle(SocketMethods.agentInterrupt, async (params) => ({
      interrupted: await this.#known(params.session_id).interrupt(),
    }));
    peer.handle(SocketMethods.agentStop, async (params) => {
      const slot = this.#slots.get(params.session_id);
      this.#log.info({ session: params.session_id, reason: params.reason }, "asked to stop an agent");
      const exit = slot ? await slot.stop(params.grace_ms) : { exitCode: null, signal: null };
      // Whatever the agent left behind (a daemon it forked off its group) goes with the session:
      // the uid is the session's alone, and may be handed out again much later.
      const uid = slot?.uid;
      if (uid !== undefined) {
        const killed = await killUidProcesses(uid);
        if (killed > 0) this.#log.info({ session: params.session_id, uid, killed }, "ended stray processes");
      }
      // The host-agent ended the session: nobody will store (or acknowledge) its last events.
      if (slot && this.#slots.get(params.session_id) === slot) this.#slots.delete(params.session_id);
      return { exit_code: exit.exitCode, signal: exit.signal };
    });
    peer.onNotification(SocketMethods.agentEventsAck, (params) => {
      const slot = this.#slots.get(params.session_id);
      if (!slot) return;
      slot.ack(params.seq);
      if (slot.done) {
        this.#slots.delete(params.session_id);
        this.#log.info({ session: params.session_id }, "the agent's end is stored; forgetting it");
      }
    });
  }

  /** The slot of a session, made on its first agent_start; the secret must match a known one. */
  #slotFor(params: AgentStartParams): AgentSlot {
    const known = this.#slots.get(params.session_id);
    if (known) {
      if (known.sessionToken !== params.session_token)
        throw new RpcError(RpcErrorCode.InvalidParams, "agent_start: another secret for a known session");
      return known;
    }
    // In a container the runner never hands its own identity (and what it can read) to an agent.
    if (this.#o.separateSessions && (params.uid === undefined || params.gid === undefined)) {
      throw new RpcError(
        RpcErrorCode.InvalidParams,
        "agent_start: in this container every agent needs a uid and gid of its own",
      );
    }
    if (this.#slots.size >= MAX_AGENTS_PER_RUNNER) {
      throw new RpcError(
        RpcErrorCode.ServerError,
        `this container already runs ${MAX_AGENTS_PER_RUNNER} agents`,
        {
          reason: "host_full",
        },
      );
    }
    const log = this.#log.child({ session: params.session_id });
    const launch = prepareLaunch(this.#o.launch, {
      sessionId: params.session_id,
      sessionToken: params.session_token,
      cwd: params.cwd,
      socketPath: params.env?.[AgentEnv.socketPath],
      home: params.home,
      apiKey: params.env?.[API_KEY_ENV],
      agent: AgentLaunchSpecSchema.parse(params.agent ?? { runtime: "scripted" }),
    });
    const agent = AgentLaunchSpecSchema.parse(params.agent ?? { runtime: "scripted" });
    const egressPort = this.#o.launch.egressPort;
    const slot = new AgentSlot({
      sessionId: params.session_id,
      sessionToken: params.session_token,
      launch,
      env: {
        ...this.#o.agentEnv,
        // npm's cache and global prefix in the agent's own home (the image's prefix is read-only).
        ...npmEnvironment(launch.home, this.#o.agentEnv.PATH ?? "/usr/local/bin:/usr/bin:/bin"),
        // Every request out goes to the host's gate through the runner's proxy.
        ...(egressPort !== null ? proxyEnvironment(egressPort, agent.proxy_token ?? null) : {}),
        ...CONTAINER_GIT_ENV,
        ...params.env,
        [AgentEnv.sessionId]: params.session_id,
        [AgentEnv.sessionToken]: params.session_token,
      },
      proxyToken: agent.proxy_token,
      cwd: params.cwd,
      uid: params.uid,
      gid: params.gid,
      logger: log,
      send: (events) => {
        const peer = this.#session.peer;
        if (peer) this.#flush(peer, params.session_id, events);
      },
      echo: (line) => this.#o.echo?.(`[${params.session_id}] ${line}`),
      approvals: this.#approvals,
    });
    this.#slots.set(params.session_id, slot);
    return slot;
  }

  #known(sessionId: string): AgentSlot {
    const slot = this.#slots.get(sessionId);
    if (slot) return slot;
    throw new RpcError(RpcErrorCode.ServerError, `no agent for session ${sessionId} in this container`, {
      reason: "session_not_found",
    });
  }

  #flush(peer: RpcPeer, sessionId: string, events: readonly AgentEvent[]): void {
    for (const batch of batchEvents(events, Limits.lineBytes - MAX_ENVELOPE_BYTES)) {
      peer.notify(SocketMethods.agentEvents, { session_id: sessionId, events: batch });
    }
  }
}
