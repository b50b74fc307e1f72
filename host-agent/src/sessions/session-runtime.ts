import type { Logger } from "../../../lib/log.js";
import type { HandlerContext } from "../../../lib/rpc/peer.js";
import type { AgentEvent, AgentState } from "../../../protocol/agent-events.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision } from "../../../protocol/approvals.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { RequestMethod } from "../../../protocol/rpc/method.js";
import type { SetupEvent } from "../../../protocol/setup.js";
import type { AgentStartParams, ApprovalParams } from "../../../protocol/socket.js";
import { SocketMethods } from "../../../protocol/socket.js";
import { type HostNotice, TunnelMethods } from "../../../protocol/tunnel.js";
import type { GitPush } from "../../../protocol/tunnel-git.js";
import type { ProjectNetwork, SessionNetworkSettings } from "../egress/project-network.js";
import { sessionNetworkLink } from "../egress/session-link.js";
import type { ModelProxy } from "../models/model-proxy.js";
import { SessionMeter } from "../models/session-meter.js";
import { HostError } from "../projects/errors.js";
import type { CallerToolRequest, OublietteMethod } from "../socket/types.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { SessionTunnel } from "../tunnel/session-tunnel.js";
import { SESSION_ENDED_DECISION } from "../tunnel/undecided.js";
import { ApprovalRelay } from "./approval-relay.js";
import { CallerCalls } from "./caller-calls.js";
import type { RunnerLink } from "./runner-link.js";

export interface SessionRuntimeOptions {
  sessionId: string;
  sessionToken: string;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  logger: Logger;
  /** The runner of the session's project container. */
  runner: RunnerLink;
  /** Pushes the caller tools config to the session's container-clients. */
  pushConfig(config: CallerToolsConfig): void;
  /** Tells the session's container-clients to list Oubliette's tools again. */
  pushToolsChanged?(): void;
  /** Called once, after the session has been cleaned up on this host. */
  onClosed(sessionId: string): void;
  /** The host's model proxy and the session's placeholder credential (null: a session without a model). */
  models?: { proxy: ModelProxy; token: string; budgetUsd?: number | undefined } | null | undefined;
  /**
   * The project's egress gate and the session's network (its policy, whether it asks, its agent's
   * runtime); `token` is the proxy credential a re-adopted agent already holds.
   */
  network?:
    | {
        project: ProjectNetwork;
        settings: SessionNetworkSettings;
        runtime: AgentRuntime;
        token?: string | undefined;
      }
    | undefined;
  timing?: TunnelTiming | undefined;
}

/** Backstop used before the session object has sent its config (e.g. right after a restart). */
const DEFAULT_BACKSTOP_MS = 5 * 60_000;
/** The host gives up this much before the container-client, so the droid hears the host's reason. */
const HOST_BACKSTOP_MARGIN_MS = 5_000;
/** The tunnel method each forwarded socket method becomes. */
const FORWARDED: Readonly<Record<OublietteMethod, RequestMethod>> = {
  [SocketMethods.oublietteTools.name]: TunnelMethods.oublietteTools,
  [SocketMethods.oublietteCallTool.name]: TunnelMethods.oublietteCall,
  [SocketMethods.sessionMessage.name]: TunnelMethods.childMessage,
  [SocketMethods.sessionEvents.name]: TunnelMethods.ownEvents,
};

/** Longest an Oubliette tool call of a droid may take (a container exec's longest timeout, and some). */
const OUBLIETTE_CALL_TIMEOUT_MS = 16 * 60_000;
/** How long stopping a session lets the runner end its agent. */
const AGENT_STOP_GRACE_MS = 5_000;

/**
 * One session on this host: an agent process inside its project's container, its tunnel to the
 * session's Durable Object, and its caller tool calls. The host-agent holds no agent stdio:
 * messages go to the runner, events come from it, so a host-agent restart leaves the agent
 * running and a new host-agent re-adopts the session from the runner's hello. The session ends
 * here when its agent has ended and the session object stored that, when the Worker stops it,
 * or when its project's container goes; the container stays for the project's other sessions.
 */
export class SessionRuntime {
  readonly #o: SessionRuntimeOptions;
  readonly #log: Logger;
  readonly #tunnel: SessionTunnel;
  readonly #calls: CallerCalls;
  readonly #approvals: ApprovalRelay;
  #config: CallerToolsConfig | null = null;
  /** The seq of the event reporting the agent's end; once stored, the session ends here. */
  #endSeq: number | null = null;
  #endReason = "";
  #closing: Promise<void> | null = null;
  /** Counts the session's model usage (sessions that run a CLI agent). */
  #meter: SessionMeter | null = null;
  #agentStarted!: (started: boolean) => void;
  #setRuntime: (runtime: AgentRuntime) => void = () => {};
  /** The session's proxy credential (its agent's proxy URL carries it), when the host has a gate. */
  readonly proxyToken: string | null = null;
  /** Settles once the runner runs this session's agent (true), or could not start it (false). */
  readonly #agentReady = new Promise<boolean>((resolve) => {
    this.#agentStarted = resolve;
  });

  constructor(options: SessionRuntimeOptions) {
    this.#o = options;
    this.#log = options.logger.child({ session: options.sessionId });
    this.#tunnel = new SessionTunnel({
      workerUrl: options.workerUrl,
      hostToken: options.hostToken,
      hostId: options.hostId,
      sessionId: options.sessionId,
      logger: this.#log,
      timing: options.timing,
      onConfig: (config) => {
        this.#config = config;
        options.pushConfig(config);
      },
      // A message can arrive (the spawn prompt, say) before the runner has started the agent.
      onDroidMessage: async (seq, text, signal) => {
        await abortable(this.#agentReady, signal);
        await options.runner.deliver(options.sessionId, seq, text, signal);
      },
      onEventsStored: (seq) => this.#stored(seq),
      onGone: (reason) => void this.stop(reason),
      onInterrupt: () => void this.#interrupt(),
      onReady: () => options.pushToolsChanged?.(),
      onStoredUsage: (usage, budgetUsd) => {
        if (usage) this.#meter?.resume(usage);
        if (budgetUsd !== undefined) this.#meter?.setBudget(budgetUsd);
      },
      onNetwork: (network) =>
        options.network?.project.updateSession(options.sessionId, {
          policies: network.session,
          approvals: network.approvals,
        }),
    });
    const network = options.network;
    if (network) {
      let runtime = network.runtime;
      this.proxyToken = network.project.addSession(
        options.sessionId,
        network.settings,
        sessionNetworkLink(this.#tunnel, () => runtime),
        network.token,
      );
      this.#setRuntime = (next) => {
        runtime = next;
      };
    }
    const models = options.models;
    if (models) {
      this.#meter = new SessionMeter({
        sessionId: options.sessionId,
        budgetUsd: models.budgetUsd,
        report: (totals, refused) =>
          this.#tunnel.reportUsage({ ...totals, ...(refused !== undefined ? { refused } : {}) }),
      });
      models.proxy.register(models.token, this.#meter);
    }
    this.#calls = new CallerCalls({
      relay: (callId, tool, args) => this.#tunnel.callerTool(callId, tool, args),
      cancel: (callId, reason) => this.#tunnel.cancel(callId, reason),
      backstopMs: () =>
        this.#config
          ? Math.max(1_000, this.#config.backstop_ms - HOST_BACKSTOP_MARGIN_MS)
          : DEFAULT_BACKSTOP_MS,
      logger: this.#log,
    });
    this.#approvals = new ApprovalRelay({
      relay: (approvalId, agent, request) => this.#tunnel.approval(approvalId, agent, request),
      cancel: (approvalId, reason) => this.#tunnel.cancelApproval(approvalId, reason),
      logger: this.#log,
    });
  }

  get sessionId(): string {
    return this.#o.sessionId;
  }

  get sessionToken(): string {
    return this.#o.sessionToken;
  }

  get closing(): boolean {
    return this.#closing !== null;
  }

  /**
   * Connects the tunnel, runs `before` (the workspace's setup), and has the runner start the
   * agent; a failure of either ends the session with its reason.
   */
  start(launch: Omit<AgentStartParams, "session_id" | "session_token">, before?: () => Promise<void>): void {
    this.#tunnel.start();
    void (before ?? (async () => {}))()
      .then(() =>
        this.#o.runner.startAgent({
          ...launch,
          session_id: this.#o.sessionId,
          session_token: this.#o.sessionToken,
        }),
      )
      .then(
        (pid) => {
          this.#log.info({ pid }, "agent started");
          this.#agentStarted(true);
        },
        (err: unknown) => {
          this.#agentStarted(false);
          const message = err instanceof Error ? err.message : String(err);
          this.#log.error({ err: message }, "the agent did not start");
          // The runner's refusal and the host's own say why in full; anything else (no runner) is named here.
          const said =
            err instanceof HostError || (err instanceof RpcError && err.code === RpcErrorCode.ServerError);
          void this.end(said ? message : `the agent could not start: ${message}`);
        },
      );
  }

  /** Serves a session whose agent the runner already runs (a restarted host-agent re-adopts it). */
  adopt(agent: AgentState & { runtime?: AgentRuntime | undefined }): void {
    if (agent.runtime !== undefined) this.#setRuntime(agent.runtime);
    this.#agentStarted(true);
    this.#tunnel.start();
    // An agent that already ended has its end event in the runner's buffer, re-sent on connect:
    // the session ends here once that is stored, as for a live one.
    this.#log.info({ agent: agent.status }, "session re-adopted");
  }

  /** The workspace's setup, as it runs before the agent: events of the session. */
  setupEvent(event: SetupEvent): void {
    this.#tunnel.setupEvent(event);
  }

  /** A caller tool call from the session's container-client. */
  callerTool(request: CallerToolRequest, ctx: HandlerContext): Promise<JsonValue> {
    return this.#calls.run(request, ctx);
  }

  /** The agent pushed a branch through the host: its session is told. */
  gitPushed(event: GitPush): void {
    this.#tunnel.gitPushed(event);
  }

  /** A droid's use of Oubliette's tools: to the session object, which checks its key. */
  oubliette(method: OublietteMethod, params: JsonObject, ctx: HandlerContext): Promise<unknown> {
    return this.#tunnel.ask(FORWARDED[method], params, ctx.signal, OUBLIETTE_CALL_TIMEOUT_MS);
  }

  /**
   * A permission question of the session's agent, from the runner: relayed to the session object,
   * which decides (asked again after a reconnect under the same approval id, it is the same
   * question). One asked after the session ended here is denied by "ended".
   */
  approval(params: ApprovalParams, ctx: HandlerContext): Promise<ApprovalDecision> {
    if (this.#closing) {
      this.#log.info(
        { approval_id: params.approval_id },
        "a permission question after the session ended here",
      );
      return Promise.resolve(SESSION_ENDED_DECISION);
    }
    return this.#approvals.run(params, ctx);
  }

  /** Events of the session's agent, from the runner. */
  agentEvents(events: AgentEvent[]): void {
    for (const event of events) {
      if (event.type === "droid_status" && (event.status === "exited" || event.status === "failed")) {
        this.#endSeq = event.seq;
        this.#endReason =
          event.status === "failed"
            ? (event.message ?? "the agent failed")
            : exitReason(event.exit_code ?? null);
      }
    }
    this.#tunnel.pushEvents(events);
    // A re-sent end the session object already has: nothing more will be stored for it.
    if (this.#endSeq !== null && this.#tunnel.storedSeq >= this.#endSeq) void this.end(this.#endReason);
  }

  /** The host channel is back: reconnect the tunnel now. */
  reconnectTunnel(): void {
    this.#tunnel.reconnectNow();
  }

  /** Ends the session here (asked by the Worker): stops its agent, closes the tunnel. */
  stop(reason: string): Promise<void> {
    this.#closing ??= (async () => {
      this.#log.info({ reason }, "stopping session");
      await this.#o.runner.stopAgent(this.#o.sessionId, reason, AGENT_STOP_GRACE_MS);
      await this.#cleanup();
    })();
    return this.#closing;
  }

  /** Leaves the agent running for the next host-agent: closes the tunnel only. */
  detach(): Promise<void> {
    this.#closing ??= (async () => {
      this.#unregisterModel();
      this.#o.network?.project.removeSession(this.#o.sessionId);
      this.#tunnel.close();
      this.#calls.clear();
      this.#approvals.clear();
    })();
    return this.#closing;
  }

  /**
   * Ends the session from this side (its agent or container cannot go on), telling the session
   * object why (and what the host saw, e.g. the project's disk bound).
   */
  async end(reason: string, notice?: HostNotice): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#log.warn({ reason }, "ending the session on this host");
    await Promise.race([this.#tunnel.end(reason, notice), delay(10_000)]);
    await this.stop(reason);
  }

  async #interrupt(): Promise<void> {
    try {
      const interrupted = await this.#o.runner.interruptAgent(this.#o.sessionId);
      this.#log.info({ interrupted }, "interrupt asked");
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, "interrupt failed");
    }
  }

  #unregisterModel(): void {
    if (this.#o.models) this.#o.models.proxy.unregister(this.#o.models.token);
  }

  #stored(seq: number): void {
    this.#o.runner.ackEvents(this.#o.sessionId, seq);
    if (this.#endSeq !== null && seq >= this.#endSeq) void this.end(this.#endReason);
  }

  async #cleanup(): Promise<void> {
    this.#tunnel.failPending({
      ok: false,
      error: { reason: "session_ended", message: "the session ended on this host" },
    });
    // Let those answers reach the container's connections before they close.
    await new Promise((resolve) => setImmediate(resolve));
    this.#tunnel.close();
    this.#calls.clear();
    this.#approvals.clear();
    this.#unregisterModel();
    this.#o.network?.project.removeSession(this.#o.sessionId);
    this.#o.runner.forget(this.#o.sessionId);
    this.#o.onClosed(this.#o.sessionId);
  }
}

function exitReason(exitCode: number | null): string {
  return `the session's agent ended (exit code ${exitCode === null ? "unknown" : exitCode})`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Waits for `promise`, or rejects with the signal's reason once it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
