import { randomUUID } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { ResumableCalls } from "../../../lib/rpc/resumable-calls.js";
import type { AgentEvent } from "../../../protocol/agent-events.js";
import { batchEvents, MAX_EVENTS_PER_BATCH } from "../../../protocol/agent-events.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";
import {
  type CallerToolOutcome,
  type CallerToolsConfig,
  rpcErrorToOutcome,
} from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";
import { Limits, MAX_ENVELOPE_BYTES } from "../../../protocol/limits.js";
import type { NetworkBlocked, NetworkUsage } from "../../../protocol/network-activity.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { type ParsedResult, parseResult, type RequestMethod } from "../../../protocol/rpc/method.js";
import type { SetupEvent } from "../../../protocol/setup.js";
import {
  type HostNotice,
  type SessionNetwork,
  type SessionUsageParams,
  TUNNEL_PROTOCOL_VERSION,
  TunnelMethods,
} from "../../../protocol/tunnel.js";
import type { GitPush } from "../../../protocol/tunnel-git.js";
import type { UsageTotals } from "../../../protocol/usage.js";
import type { TunnelTiming } from "./reconnecting-socket.js";
import { toWs } from "./reconnecting-socket.js";
import { TunnelLink } from "./tunnel-link.js";
import { SESSION_ENDED_DECISION, undecided } from "./undecided.js";

export interface SessionTunnelOptions {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  sessionId: string;
  logger: Logger;
  timing?: TunnelTiming;
  onConfig(config: CallerToolsConfig): void;
  /** Writes a droid message to the agent; resolves once written. `signal` aborts if the tunnel drops. */
  onDroidMessage(seq: number, text: string, signal: AbortSignal): Promise<void>;
  /** The session object has stored agent events up to `seq` (the runner may drop them). */
  onEventsStored(seq: number): void;
  /** The Worker no longer runs this session here (unknown, ended, or placed on another host). */
  onGone(reason: string): void;
  /** The tunnel is (again) ready: the session object may serve other tools than before (it may have been upgraded). */
  onReady?(): void;
  /** The caller asked to interrupt the droid's turn in flight. */
  onInterrupt(): void;
  /** The usage the session object stored and its budget, learnt at every hello (the meter goes on from them). */
  onStoredUsage(usage: UsageTotals | undefined, budgetUsd: number | undefined): void;
  /** The session's network as its object knows it, learnt at every hello (the gate applies it). */
  onNetwork?(network: SessionNetwork): void;
}

/** Most agent events queued for the session object; more output is dropped (and said so). */
const MAX_QUEUED_EVENTS = 20_000;
const HELLO_TIMEOUT_MS = 15_000;
/** How long `ask` waits for a tunnel that is reconnecting. */
const READY_WAIT_MS = 30_000;
/** Most pushes the session object has not acknowledged yet; past it, a push goes untold (and said so). */
const MAX_UNTOLD_PUSHES = 256;
/** Most setup events kept while the tunnel is not ready (its output beyond is dropped, its end never). */
const MAX_QUEUED_SETUP_EVENTS = 2_000;
/** Most refusals the session object has not acknowledged yet; past it, one goes untold (its count stays in the totals). */
const MAX_UNTOLD_BLOCKS = 256;

function unreachable(): RpcError {
  return new RpcError(RpcErrorCode.ServerError, "the session's object cannot be reached from this host now", {
    reason: "host_unreachable",
  });
}

/**
 * One session's tunnel to its SessionDurableObject. It keeps, across every reconnect: the caller
 * tool calls waiting for an outcome (re-sent under their call id, which the object de-duplicates),
 * the agent's permission questions waiting for a decision (re-sent under their approval id, the
 * request id of `approval`), cancellations not yet delivered, agent events not yet stored
 * (re-sent; idempotent by seq) and a host-side end of the session not yet acknowledged.
 */
export class SessionTunnel {
  readonly #o: SessionTunnelOptions;
  /** Who waits for the tunnel to be ready (`ask`). */
  readonly #readyWaiters: (() => void)[] = [];
  /** The latest usage report, re-sent after every reconnect (totals: repeating one is harmless). */
  #usage: SessionUsageParams | null = null;
  /** The latest network report, re-sent after every reconnect (totals too). */
  #network: NetworkUsage | null = null;
  /** Setup events made before the tunnel was ready (sent at the hello; bounded). */
  #setupEvents: SetupEvent[] = [];
  /** The gate's refusals until the session object acknowledged each (re-sent by id). */
  readonly #blocks: ResumableCalls<void>;
  readonly #link: TunnelLink;
  readonly #calls: ResumableCalls<CallerToolOutcome>;
  readonly #approvals: ResumableCalls<ApprovalDecision>;
  /** The agent's pushes until the session object acknowledged each (re-sent by push id). */
  readonly #pushes: ResumableCalls<void>;
  #events: AgentEvent[] = [];
  #storedSeq = 0;
  #droppedEvents = 0;
  #sending = false;
  #ready: RpcPeer | null = null;
  #ending: { reason: string; notice?: HostNotice; done: Promise<void>; resolve(): void } | null = null;
  #gone = false;

  constructor(options: SessionTunnelOptions) {
    this.#o = options;
    this.#calls = new ResumableCalls<CallerToolOutcome>({
      method: TunnelMethods.callerTool.name,
      peer: () => this.#ready,
      answered: (result) => ({ ok: true, result: parseResult(TunnelMethods.callerTool, result) }),
      refused: (err) =>
        rpcErrorToOutcome(
          err instanceof RpcError ? err.toErrorObject() : { code: -32603, message: String(err) },
        ),
    });
    this.#approvals = new ResumableCalls<ApprovalDecision>({
      method: TunnelMethods.approval.name,
      peer: () => this.#ready,
      answered: (result) => {
        try {
          return parseResult(TunnelMethods.approval, result);
        } catch (err) {
          return undecided("error", err instanceof Error ? err.message : String(err));
        }
      },
      refused: (err) => undecided("error", err instanceof Error ? err.message : String(err)),
    });
    this.#blocks = new ResumableCalls<void>({
      method: TunnelMethods.networkBlocked.name,
      peer: () => this.#ready,
      answered: () => {},
      refused: (err) =>
        this.#o.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "the session object refused a network refusal report",
        ),
    });
    this.#pushes = new ResumableCalls<void>({
      method: TunnelMethods.gitPushed.name,
      peer: () => this.#ready,
      answered: () => {},
      refused: (err) =>
        options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "git_pushed refused"),
    });
    const url = new URL(
      `/v1/tunnel/sessions/${encodeURIComponent(options.sessionId)}`,
      toWs(options.workerUrl),
    );
    this.#link = new TunnelLink({
      url: url.toString(),
      hostToken: options.hostToken,
      logger: options.logger,
      timing: options.timing,
      serve: (peer) => this.#serve(peer),
      opened: (peer) => void this.#hello(peer),
      closed: () => {
        this.#ready = null;
        this.#sending = false;
      },
      onPermanentFailure: (status, body) =>
        this.#goneFor(`the Worker refused the session tunnel (${status}): ${body}`),
    });
  }

  start(): void {
    this.#link.start();
  }

  /** The host channel is back: reconnect now instead of waiting out the backoff. */
  reconnectNow(): void {
    this.#link.retryNow();
  }

  get connected(): boolean {
    return this.#ready !== null;
  }

  /** Relays one caller tool call; resolves with its outcome however many reconnects it takes. */
  callerTool(callId: string, tool: string, args: JsonObject): Promise<CallerToolOutcome> {
    return this.#calls.call(callId, { call_id: callId, tool, arguments: args });
  }

  /** Nobody waits for `callId` any more: tell the session object (now, or after the next reconnect). */
  cancel(callId: string, reason: string): void {
    this.#calls.cancel(callId, {
      outcome: { ok: false, error: { reason: "cancelled", message: reason } },
      reason,
    });
  }

  /**
   * Relays one permission question of the session's agent; resolves with the session object's
   * decision however many reconnects it takes. Asked again under the same id while it waits, it
   * is the same question.
   */
  approval(approvalId: string, agent: AgentRuntime, request: ApprovalRequest): Promise<ApprovalDecision> {
    return this.#approvals.call(approvalId, { approval_id: approvalId, agent, request });
  }

  /** Nobody waits for approval `approvalId` any more: tell the session object (now, or after the next reconnect). */
  cancelApproval(approvalId: string, reason: string): void {
    this.#approvals.cancel(approvalId, { outcome: undecided("ended", reason), reason });
  }

  /** Queues agent events (from the runner) for the session object, in seq order. */
  pushEvents(events: readonly AgentEvent[]): void {
    let last = this.#events.at(-1)?.seq ?? this.#storedSeq;
    for (const event of events) {
      if (event.seq <= last) continue;
      if (this.#events.length >= MAX_QUEUED_EVENTS && event.type !== "droid_status") {
        this.#droppedEvents += 1;
        continue;
      }
      this.#events.push(event);
      last = event.seq;
    }
    if (this.#droppedEvents > 0) {
      this.#o.logger.warn({ dropped: this.#droppedEvents }, "agent output dropped: the tunnel queue is full");
      this.#droppedEvents = 0;
    }
    void this.#pump();
  }

  /** Highest agent event seq the session object has stored. */
  get storedSeq(): number {
    return this.#storedSeq;
  }

  /**
   * Tells the session object the session is over on this host (with what the host saw, if
   * anything); resolves once it acknowledged (or is gone).
   */
  end(reason: string, notice?: HostNotice): Promise<void> {
    if (this.#gone) return Promise.resolve();
    if (!this.#ending) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => {
        resolve = r;
      });
      this.#ending = { reason, ...(notice ? { notice } : {}), done, resolve };
      if (this.#ready) void this.#sendEnd(this.#ready);
    }
    return this.#ending.done;
  }

  /** Fails every waiting call and denies every waiting permission question (the session is over on this host). */
  failPending(outcome: CallerToolOutcome): void {
    this.#calls.settleAll(() => outcome);
    this.#approvals.settleAll(() => SESSION_ENDED_DECISION);
  }

  /** Pushes the session object has not acknowledged yet. */
  get untoldPushes(): number {
    return this.#pushes.size;
  }

  close(): void {
    this.#link.close();
    this.#ready = null;
  }

  /**
   * One request to the session object (not re-sent after a reconnect: the droid asks again),
   * waiting up to READY_WAIT_MS for the tunnel; `signal` gives up (the droid cancelled). A
   * forwarder: params and answer pass as they are (the droid's side parses the answer).
   */
  async ask(
    method: RequestMethod,
    params: unknown,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<unknown> {
    if (!this.#ready) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(unreachable()), READY_WAIT_MS);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.#readyWaiters.push(done);
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    }
    const peer = this.#ready;
    if (!peer) throw unreachable();
    return peer.request(method.name, params, { signal, timeoutMs });
  }

  /** Reports the session's model usage (totals; the latest is re-sent after a reconnect). */
  reportUsage(usage: SessionUsageParams): void {
    this.#usage = usage;
    this.#ready?.notify(TunnelMethods.sessionUsage, usage);
  }

  /** Reports the workspace's setup as it runs (kept until the tunnel is ready, the output bounded). */
  setupEvent(event: SetupEvent): void {
    if (this.#ready) {
      this.#ready.notify(TunnelMethods.setupEvent, event);
      return;
    }
    if (this.#setupEvents.length >= MAX_QUEUED_SETUP_EVENTS && event.type === "setup_output") return;
    this.#setupEvents.push(event);
  }

  /** Reports the hosts the session reached (totals; the latest is re-sent after a reconnect). */
  reportNetwork(usage: NetworkUsage): void {
    this.#network = usage;
    this.#ready?.notify(TunnelMethods.networkUsage, usage);
  }

  /** Tells the session the gate refused a connection: sent until the session object acknowledged it. */
  networkBlocked(event: NetworkBlocked): void {
    if (this.#blocks.size >= MAX_UNTOLD_BLOCKS) {
      this.#o.logger.warn({ host: event.host }, "network refusal not told to the session: too many untold");
      return;
    }
    const blockedId = `nb_${randomUUID().replaceAll("-", "")}`;
    void this.#blocks.call(blockedId, { ...event, blocked_id: blockedId });
  }

  /**
   * Tells the session its agent pushed a branch: sent now or after the next reconnect, and again
   * after every reconnect until the session object acknowledged it (it tells its callers once).
   */
  gitPushed(event: GitPush): void {
    if (this.#pushes.size >= MAX_UNTOLD_PUSHES) {
      this.#o.logger.warn({ branch: event.branch }, "git push not told to the session: too many untold");
      return;
    }
    const pushId = `gp_${randomUUID()}`;
    void this.#pushes.call(pushId, { ...event, push_id: pushId });
  }

  #serve(peer: RpcPeer): void {
    peer.onNotification(TunnelMethods.callerToolsConfig, (config) => this.#o.onConfig(config));
    peer.onNotification(TunnelMethods.droidInterrupt, () => this.#o.onInterrupt());
    peer.handle(TunnelMethods.droidMessage, async (params, ctx) => {
      await this.#o.onDroidMessage(params.seq, params.text, ctx.signal);
      return {};
    });
  }

  async #hello(peer: RpcPeer): Promise<void> {
    let hello: ParsedResult<typeof TunnelMethods.sessionHello>;
    try {
      hello = await peer.request(
        TunnelMethods.sessionHello,
        { v: TUNNEL_PROTOCOL_VERSION, host_id: this.#o.hostId },
        { timeoutMs: HELLO_TIMEOUT_MS, timeoutMessage: "no answer to session_hello" },
      );
    } catch (err) {
      if (!(err instanceof RpcError) || err.code === RpcErrorCode.ConnectionClosed) return;
      const reason = err.reason;
      if (reason === "session_not_found" || reason === "session_ended" || reason === "not_placed") {
        this.#goneFor(err.message);
        return;
      }
      this.#o.logger.warn({ code: err.code, reason: err.message }, "session_hello failed; reconnecting");
      this.#link.drop();
      return;
    }
    if (this.#link.peer !== peer) return;
    this.#ready = peer;
    for (const wake of this.#readyWaiters.splice(0)) wake();
    this.#stored(hello.stored_event_seq);
    this.#o.onConfig(hello.config);
    this.#o.onStoredUsage(hello.usage, hello.max_cost_usd);
    if (hello.network) this.#o.onNetwork?.(hello.network);
    this.#o.onReady?.();
    if (this.#usage) peer.notify(TunnelMethods.sessionUsage, this.#usage);
    if (this.#network) peer.notify(TunnelMethods.networkUsage, this.#network);
    for (const event of this.#setupEvents.splice(0)) peer.notify(TunnelMethods.setupEvent, event);
    this.#calls.resend(peer);
    this.#approvals.resend(peer);
    this.#pushes.resend(peer);
    this.#blocks.resend(peer);
    if (this.#ending) void this.#sendEnd(peer);
    void this.#pump();
  }

  async #sendEnd(peer: RpcPeer): Promise<void> {
    const ending = this.#ending;
    if (!ending) return;
    try {
      const params = { reason: ending.reason, ...(ending.notice ? { notice: ending.notice } : {}) };
      await peer.request(TunnelMethods.sessionEnd, params, { timeoutMs: HELLO_TIMEOUT_MS });
      ending.resolve();
    } catch (err) {
      if (err instanceof RpcError && err.code !== RpcErrorCode.ConnectionClosed && err.reason !== "timeout") {
        ending.resolve(); // the object refused (already ended): nothing left to tell it
      }
    }
  }

  async #pump(): Promise<void> {
    const peer = this.#ready;
    if (!peer || this.#sending || this.#events.length === 0) return;
    this.#sending = true;
    const batch =
      batchEvents(this.#events.slice(0, MAX_EVENTS_PER_BATCH), Limits.frameBytes - MAX_ENVELOPE_BYTES)[0] ??
      [];
    try {
      const result = await peer.request(TunnelMethods.sessionEvents, { events: batch });
      this.#stored(result.stored_seq);
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) return;
      // Never re-send a batch the object refused: it would refuse it forever.
      this.#o.logger.error(
        { err, first: batch[0]?.seq, last: batch.at(-1)?.seq },
        "session_events refused; dropped",
      );
      this.#stored(batch.at(-1)?.seq ?? 0);
    } finally {
      if (this.#ready === peer) this.#sending = false;
    }
    void this.#pump();
  }

  #stored(seq: number): void {
    if (seq <= this.#storedSeq) return;
    this.#storedSeq = seq;
    while ((this.#events[0]?.seq ?? Number.POSITIVE_INFINITY) <= seq) this.#events.shift();
    this.#o.onEventsStored(seq);
  }

  #goneFor(reason: string): void {
    if (this.#gone) return;
    this.#gone = true;
    this.#ending?.resolve();
    this.#o.onGone(reason);
  }
}
