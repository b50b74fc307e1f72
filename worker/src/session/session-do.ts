import { DurableObject } from "cloudflare:workers";
import { callApprovalId } from "../../../protocol/approvals.js";
import type { GitEvent } from "../../../protocol/events.js";
import { type CallerPrincipal, stillValid } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { AppError, capture, type Result } from "../errors.js";
import type { JobEvent } from "../jobs/job-events.js";
import { errorMessage } from "../log.js";
import { AlarmSchedule } from "../objects/alarm-schedule.js";
import { objects } from "../objects/keys.js";
import type { ApprovalResponseInput } from "./approval-records.js";
import { Approvals } from "./approvals.js";
import { CallerCalls } from "./caller-calls.js";
import { CallerInput } from "./caller-input.js";
import { EventLog } from "./event-log.js";
import { EventWaiters } from "./event-waiters.js";
import { GatedCalls } from "./gated-calls.js";
import { HostInput } from "./host-input.js";
import { HostTunnel } from "./host-tunnel.js";
import { Lifetime } from "./lifetime.js";
import { McpFanout } from "./mcp-fanout.js";
import { MessageNotices } from "./message-notices.js";
import type { NestInfo } from "./nesting.js";
import { Presence } from "./presence.js";
import { requireReader, requireWriter } from "./session-access.js";
import { SessionEndedError } from "./session-errors.js";
import { type ProjectMoved, SessionLifecycle } from "./session-lifecycle.js";
import { isLive, type PendingRequests, type SessionInfo, type SessionStatus } from "./session-record.js";
import { SessionState } from "./session-state.js";
import { SessionStore } from "./session-store.js";
import { SessionViews } from "./session-views.js";
import { SubscriberSockets } from "./subscriber-sockets.js";
import type {
  CreateSessionInput,
  EventsPage,
  PresenceChange,
  RespondInput,
  SendMessageInput,
  Via,
} from "./types.js";

/**
 * One per agent session: thin RPC wiring over its parts, each behind a narrow interface:
 * - the record, shared by all (SessionState), and the session's life (SessionLifecycle);
 * - what the host sends about its droid (HostTunnel, HostInput) and what callers send
 *   (CallerInput);
 * - pending requests: caller tool calls (CallerCalls, on pending/pending-requests.ts), with the
 *   caller's presence deciding whether they may wait (Presence);
 * - views and streams: info, pages and long polls of events (SessionViews), fan-out to the
 *   owner's MCP sessions (McpFanout) and plain subscribers (SubscriberSockets);
 * - time: the lifetime rules, undelivered-message notices, and one alarm for every deadline.
 * Every public method is an RPC entry point; everything else is a part's.
 */
export class SessionDurableObject extends DurableObject<Env> {
  readonly #state: SessionState;
  readonly #events: EventLog;
  readonly #calls: CallerCalls;
  readonly #approvals: Approvals;
  readonly #gated: GatedCalls;
  readonly #presence: Presence;
  readonly #tunnel: HostTunnel;
  readonly #subscribers: SubscriberSockets;
  readonly #lifetime: Lifetime;
  readonly #messageNotices: MessageNotices;
  readonly #lifecycle: SessionLifecycle;
  readonly #views: SessionViews;
  readonly #host: HostInput;
  readonly #input: CallerInput;
  readonly #alarm: AlarmSchedule;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const cfg = config(env);
    const state = new SessionState(new SessionStore(ctx.storage.sql));
    this.#state = state;
    const record = () => state.require();
    const save = () => state.save();
    const scheduleAlarm = () => this.#alarm.schedule();
    const waitUntil = (promise: Promise<unknown>) => ctx.waitUntil(promise);
    const waiters = new EventWaiters();
    const fanout = new McpFanout(env, state.log, (id) => this.#presence.mcpChanged(id, "gone"));
    this.#subscribers = new SubscriberSockets({
      state: ctx,
      record,
      eventsSince: (since, limit) => state.store.eventsSince(since, limit),
      keepAliveMs: cfg.keepAliveMs,
      ownerOpened: () => this.#presence.plainOpened(),
      ownerClosed: () => this.#presence.plainClosed(),
      respond: (input) => this.#auditedAnswer(input),
      stillValid: (principal) => stillValid(env, principal),
    });
    this.#events = new EventLog(
      state.store,
      {
        broadcast: (json, index) => this.#subscribers.broadcast(json, index),
        toMcp: (event) => {
          for (const sub of state.store.subscribers()) fanout.send(sub.mcpSessionId, event);
        },
        appended: () => waiters.wake(),
      },
      () => record().sessionId,
    );
    this.#calls = new CallerCalls({
      sql: ctx.storage.sql,
      record,
      events: this.#events,
      sendOutcome: (callId, outcome) => this.#tunnel.sendOutcome(callId, outcome),
      callerMayWait: (now) => this.#presence.mayWait(now),
      scheduleAlarm,
      activity: (now) => {
        this.#lifetime.touch(now);
        save();
      },
      log: state.log,
    });
    this.#approvals = new Approvals({
      sql: ctx.storage.sql,
      record,
      save,
      events: this.#events,
      sendDecision: (id, decision) => this.#tunnel.sendDecision(id, decision),
      scheduleAlarm,
      activity: (now) => {
        this.#lifetime.touch(now);
        save();
      },
      callDecided: (call, decision) => {
        const outcome = this.#gated.decided(call, decision);
        if (outcome) this.#tunnel.sendOutcome(call.id, outcome);
      },
      log: state.log,
    });
    this.#gated = new GatedCalls({ record, approvals: this.#approvals, calls: this.#calls });
    this.#presence = new Presence({
      record,
      save,
      store: state.store,
      graceMs: cfg.callerGraceMs,
      ownerSubscribed: () => this.#subscribers.ownerConnected(),
      countWaiting: () => this.#calls.countWaiting(),
      failWaiting: (outcome) => this.#calls.failAll(outcome),
      scheduleAlarm,
    });
    this.#lifetime = new Lifetime({ record, countWaiting: () => this.#calls.countWaiting() });
    this.#views = new SessionViews({
      state,
      events: this.#events,
      calls: this.#calls,
      approvals: this.#approvals,
      presence: this.#presence,
      waiters,
      busy: () => this.#lifetime.busy(),
      stillValid: (principal) => stillValid(env, principal),
    });
    this.#lifecycle = new SessionLifecycle({
      env,
      state,
      events: this.#events,
      calls: this.#calls,
      approvals: this.#approvals,
      busy: () => this.#lifetime.busy(),
      attachOwner: (input) => this.#input.attach(input.owner, input.via),
      queueMessage: (text) => this.#input.queueMessage(text),
      closeLinks: () => {
        this.#tunnel.close(1000, "session ended");
        this.#subscribers.closeAll(1000, "session ended");
      },
      scheduleAlarm,
      waitUntil,
    });
    this.#host = new HostInput({
      env,
      state,
      events: this.#events,
      lifetime: this.#lifetime,
      lifecycle: this.#lifecycle,
      views: this.#views,
      approvals: this.#approvals,
      scheduleAlarm,
      waitUntil,
    });
    this.#tunnel = new HostTunnel(ctx, {
      placedHost: () => state.current?.hostId ?? null,
      liveStatus: () => {
        const status = record().status;
        return isLive(status) ? null : status;
      },
      sessionId: () => record().sessionId,
      storedEventSeq: () => record().storedHostEventSeq,
      config: () => this.#input.callerConfig(),
      pendingMessages: () => state.store.pendingMessages(),
      callerTool: (callId, tool, args) => {
        this.#lifetime.touch(Date.now());
        return this.#gated.call({ id: callId, tool, arguments: args });
      },
      approval: (id, agent, request) => this.#approvals.onAsk(id, agent, request),
      cancel: (id, reason) => {
        this.#calls.cancel(id, reason);
        this.#approvals.cancel(id, reason);
        this.#approvals.cancel(callApprovalId(id), reason);
      },
      events: (events) => this.#host.agentEvents(events),
      end: (reason, notice) => {
        if (notice && state.live) this.#events.emit(notice);
        return this.#lifecycle.finish("ended", reason);
      },
      messageDelivered: (seq) => this.#messageNotices.delivered(seq),
      usage: (report) => this.#host.usage(report),
      gitPushed: (event) => this.#host.gitPushed(event),
      childMessage: (params) => this.#host.spawnChild(params),
      ownEvents: (params) => this.#host.ownEvents(params),
      oublietteTools: (apiKey) => this.#host.oublietteTools(apiKey),
      oublietteCall: (apiKey, tool, args) => this.#host.oublietteCall(apiKey, tool, args),
      storedUsage: () => state.current?.usage ?? null,
      budgetUsd: () => state.current?.agent?.max_cost_usd ?? null,
      log: state.log,
    });
    this.#input = new CallerInput({
      env,
      state,
      events: this.#events,
      presence: this.#presence,
      tunnel: this.#tunnel,
      lifetime: this.#lifetime,
      scheduleAlarm,
    });
    this.#messageNotices = new MessageNotices({
      store: state.store,
      delayMs: cfg.messageNoticeMs,
      emit: (body) => this.#events.emit(body),
    });
    this.#alarm = new AlarmSchedule(
      ctx,
      () => [
        this.#calls.nextDue(),
        this.#approvals.nextDue(),
        this.#presence.nextDue(),
        state.live ? this.#lifetime.nextDue() : null,
        state.live ? this.#messageNotices.nextDue() : null,
      ],
      () => state.log,
    );
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    // Subscribers of revocable tokens outlive a hibernation; watch their tokens again.
    if (state.current) this.#subscribers.watchTokens();
  }

  // ------------------------------------------------------------------ RPC from tools

  async create(input: CreateSessionInput): Promise<Result<SessionInfo & { moved?: ProjectMoved }>> {
    if (this.#state.current)
      return { ok: false, error: { code: "conflict", message: `session ${input.sessionId} already exists` } };
    const started = await this.#lifecycle.start(input);
    if (!started.ok) return started;
    const { moved } = started.value;
    return { ok: true, value: { ...this.#views.info(), ...(moved ? { moved } : {}) } };
  }

  async sendMessage(
    input: SendMessageInput,
  ): Promise<Result<{ session: SessionInfo; message_seq: number | null }>> {
    return capture(() => {
      const seq = this.#input.send(input);
      return { session: this.#views.info(), message_seq: seq };
    });
  }

  async getInfo(principal: CallerPrincipal, via: Via | null): Promise<Result<SessionInfo>> {
    return capture(() => {
      this.#reader(principal, via);
      return this.#views.info();
    });
  }

  /** The session's events from `sinceIndex` on; with `waitMs`, a read that finds none waits for one. */
  async readEvents(
    principal: CallerPrincipal,
    sinceIndex: number,
    limit: number,
    via: Via | null,
    waitMs = 0,
    // Events typed loosely here: the recursive JSON type is too deep for RPC stub typing.
  ): Promise<Result<EventsPage>> {
    return capture(async () => {
      this.#reader(principal, via);
      return this.#views.waitForEvents(principal, sinceIndex, limit, waitMs);
    });
  }

  /** The session's caller tool requests that wait for an answer, soonest deadline first. */
  async pending(principal: CallerPrincipal, via: Via | null): Promise<Result<PendingRequests>> {
    return capture(() => {
      this.#reader(principal, via);
      return this.#views.pending();
    });
  }

  async end(principal: CallerPrincipal, reason: string): Promise<Result<SessionInfo>> {
    const checked = await capture(() => requireWriter(this.#state.require(), principal, "end"));
    if (!checked.ok) return checked;
    await this.#lifecycle.finish("ended", reason);
    return { ok: true, value: this.#views.info() };
  }

  /** A caller's answer to a caller_tool_request: only the owner may answer, once, while the droid waits. */
  async respond(input: RespondInput): Promise<Result<{ request_id: string; status: "delivered" }>> {
    return capture(() => {
      this.#input.attach(input.principal, input.via);
      return this.#calls.respond(input);
    });
  }

  /** A person's answer to an approval_request: a writer of the project, once, while the agent waits. */
  async answerApproval(
    input: ApprovalResponseInput,
  ): Promise<Result<{ request_id: string; decision: "allow" | "deny"; scope: string }>> {
    return capture(() => this.#approvals.respond(input));
  }

  /** Interrupts the droid's turn in flight; the session stays (writers of the project may). */
  async interrupt(
    principal: CallerPrincipal,
  ): Promise<Result<{ session: SessionInfo; interrupt_sent: boolean }>> {
    return capture(() => {
      const record = requireWriter(this.#state.require(), principal, "interrupt");
      if (!isLive(record.status)) throw new SessionEndedError(record);
      const sent = this.#tunnel.sendInterrupt();
      this.#state.log.info("interrupt asked", { token: principal.tokenId, sent });
      return { session: this.#views.info(), interrupt_sent: sent };
    });
  }

  // ------------------------------------------------------------------ RPC from other objects

  /** The MCP session reports its event stream opened, dropped, or that the session is gone. */
  async presenceChanged(mcpSessionId: string, change: PresenceChange): Promise<void> {
    if (!this.#state.current) return;
    this.#presence.mcpChanged(mcpSessionId, change);
  }

  /**
   * An event of a job this session's droid started, or one acting on this session: into the log,
   * to every subscriber. An ended session's log is closed; the job's other listeners still hear it.
   */
  async jobEvent(event: JobEvent): Promise<void> {
    if (!this.#state.live) return;
    const { at: _at, ...body } = event;
    this.#events.emit(body);
  }

  /** A git event of this session's workspace (`workspace push` / `pull_request`): into the log, to every subscriber. */
  async gitEvent(event: GitEvent): Promise<void> {
    if (this.#state.live) this.#events.emit(event);
  }

  /**
   * The host registry gave up on this session's host (gone past the grace period, or back
   * without the session): it ends at once, its waiting calls fail with `host_lost`. The placement
   * is already released.
   */
  async hostLost(reason: string): Promise<void> {
    if (!this.#state.live) return;
    this.#state.log.warn("host lost", { host: this.#state.current?.hostId, reason });
    await this.#lifecycle.finish("lost", reason, { placementReleased: true });
  }

  /** Whether the session is busy; a busy one tells schedule `scheduleId` once it is idle. */
  async turnBusy(scheduleId: string | null): Promise<boolean> {
    return this.#lifecycle.turnBusy(scheduleId);
  }

  /** The session's status, or null when this object holds no session. */
  async status(): Promise<SessionStatus | null> {
    return this.#state.current?.status ?? null;
  }

  /** What a child session needs to know of this one, its parent (nesting.ts). */
  async nestInfo(): Promise<Result<NestInfo>> {
    return capture(() => this.#lifecycle.nestInfo());
  }

  /** A child this session's droid started: it ends with this session. */
  async addChild(childId: string): Promise<Result<void>> {
    return capture(() => this.#lifecycle.addChild(childId));
  }

  /** This session's status, or null when it does not exist. */
  async liveStatus(): Promise<SessionStatus | null> {
    return this.#state.current?.status ?? null;
  }

  /** Ends the session for the system (its project was deleted, say); no principal to check. */
  async terminate(reason: string): Promise<void> {
    if (!this.#state.live) return;
    await this.#lifecycle.finish("ended", reason);
  }

  /** The host's token was revoked: its tunnel is cut (the host-loss grace then decides the session). */
  async dropTunnel(reason: string): Promise<void> {
    if (!this.#state.current) return;
    this.#tunnel.close(4001, reason);
  }

  /** Forgets an ended session entirely (session cleanup); a live one is left alone. */
  async purge(): Promise<boolean> {
    if (this.#state.live) return false;
    await this.ctx.storage.deleteAll();
    this.#state.forget();
    return true;
  }

  // ------------------------------------------------------------------ HTTP: tunnel and subscribers

  override async fetch(request: Request): Promise<Response> {
    if (!this.#state.current) {
      return Response.json({ error: { code: "not_found", message: "session not found" } }, { status: 404 });
    }
    const url = new URL(request.url);
    if (url.pathname.endsWith("/tunnel")) return this.#tunnel.accept(request);
    if (url.pathname.endsWith("/ws")) return this.#subscribers.acceptWebSocket(request, url);
    if (url.pathname.endsWith("/events")) return this.#subscribers.openSse(request, url);
    return Response.json({ error: { code: "not_found", message: "no such route" } }, { status: 404 });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (!this.#state.current) return;
    if (HostTunnel.owns(ws)) this.#tunnel.onMessage(ws, message);
    else this.#subscribers.onMessage(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    if (!this.#state.current) return;
    if (HostTunnel.owns(ws)) this.#tunnel.onClose(ws, code);
    else this.#subscribers.onClose(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    this.#alarm.fired();
    if (!this.#state.current) return;
    const now = Date.now();
    this.#calls.expire(now);
    this.#approvals.expire(now);
    this.#presence.check(now);
    this.#calls.prune(now);
    this.#approvals.prune(now);
    if (this.#state.live) this.#messageNotices.check(now);
    const stop = this.#state.live ? this.#lifetime.expired(now) : null;
    if (stop !== null) {
      this.#state.log.info("session stopped by its lifetime rules", { reason: stop });
      await this.#lifecycle.finish("ended", stop);
    }
    this.#alarm.schedule();
  }

  // ------------------------------------------------------------------ private

  /** A reader of the session; the owner's MCP session follows it from here on. */
  #reader(principal: CallerPrincipal, via: Via | null): void {
    requireReader(this.#state.require(), principal);
    this.#input.attach(principal, via);
  }

  /**
   * An answer over a plain WebSocket: a call outside the tools, audited here as the
   * caller_tool_response tool is — a refused one only (each answer is kept by the session).
   */
  #auditedAnswer(input: RespondInput): unknown {
    try {
      return this.#calls.respond(input);
    } catch (err) {
      const entry = {
        at: Date.now(),
        token_id: input.principal.tokenId,
        action: "ws caller_tool_response",
        target: this.#state.require().sessionId,
        outcome: err instanceof AppError ? err.code : "internal",
      };
      objects
        .audit(this.env)
        .record(entry)
        .catch((error: unknown) =>
          this.#state.log.error("could not write the audit log", { error: errorMessage(error) }),
        );
      throw err;
    }
  }
}
