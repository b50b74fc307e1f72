import { DurableObject } from "cloudflare:workers";
import type { AgentEvent } from "../../../protocol/agent-events.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { SessionUsageParams } from "../../../protocol/tunnel.js";
import { project, requireAccess } from "../auth/access.js";
import { authenticate, type CallerPrincipal, stillValid } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { AppError, capture, fail, type Result, unwrap } from "../errors.js";
import type { JobEvent } from "../jobs/job-events.js";
import { createLog, errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import { withChildEvents } from "../tools/child-events.js";
import { backgroundContext } from "../tools/context.js";
import { droidCall, droidToolList } from "../tools/droid-tools.js";
import { spawnOrResume } from "../tools/session-spawn.js";
import { CallerCalls } from "./caller-calls.js";
import { EventLog } from "./event-log.js";
import { EventWaiters } from "./event-waiters.js";
import { HostTunnel } from "./host-tunnel.js";
import { Lifetime } from "./lifetime.js";
import { McpFanout } from "./mcp-fanout.js";
import { MessageNotices } from "./message-notices.js";
import type { NestInfo } from "./nesting.js";
import { failure } from "./outcomes.js";
import { Presence } from "./presence.js";
import { NotOwnerError, SessionEndedError, SessionNotFoundError } from "./session-errors.js";
import {
  isLive,
  type PendingRequests,
  type SessionInfo,
  type SessionRecord,
  type SessionStatus,
} from "./session-record.js";
import { SessionStore } from "./session-store.js";
import { SubscriberSockets } from "./subscriber-sockets.js";
import type {
  CallerPresence,
  CreateSessionInput,
  EventsPage,
  PresenceChange,
  RespondInput,
  SendMessageInput,
  Via,
} from "./types.js";

/** The longest one `readEvents` call waits for an event (`session events` asks in slices of less). */
const MAX_EVENT_WAIT_MS = 50_000;
/** How often a reader waiting for events has its token checked again. */
const TOKEN_RECHECK_MS = 1_000;
/** Waiting calls listed by `session get` and `session pending` (the count says how many there are). */
const MAX_LISTED_REQUESTS = 100;

/** Schedules one session tells when it goes idle; more wait for their next alarm instead. */
const MAX_IDLE_WATCHERS = 16;

/**
 * One per agent session: a thin RPC shell over its parts. Owns the session record (owner, caller
 * id and tools, status, host), the event log, the caller tool calls with their deadlines (one
 * alarm), the caller's presence, fan-out of every event to the owner's MCP sessions and plain
 * subscribers, and the host-agent's session tunnel. Every public method is an RPC entry point;
 * everything else is private.
 */
export class SessionDurableObject extends DurableObject<Env> {
  readonly #store: SessionStore;
  readonly #events: EventLog;
  readonly #calls: CallerCalls;
  readonly #presence: Presence;
  readonly #tunnel: HostTunnel;
  readonly #subscribers: SubscriberSockets;
  readonly #fanout: McpFanout;
  readonly #lifetime: Lifetime;
  readonly #messageNotices: MessageNotices;
  readonly #waiters = new EventWaiters();
  #record: SessionRecord | null;
  #log: Log;
  #alarmAt: number | null = null;
  /** A refused droid key has been told about (until the key works again). */
  #keyRefusalTold = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const cfg = config(env);
    this.#store = new SessionStore(ctx.storage.sql);
    this.#record = this.#store.loadRecord();
    this.#log = createLog({ component: "session", session: this.#record?.sessionId });
    const record = () => this.#requireRecord();
    this.#fanout = new McpFanout(env, this.#log, (id) => this.#presence.mcpChanged(id, "gone"));
    this.#subscribers = new SubscriberSockets({
      state: ctx,
      record,
      eventsSince: (since, limit) => this.#store.eventsSince(since, limit),
      keepAliveMs: cfg.keepAliveMs,
      ownerOpened: () => this.#presence.plainOpened(),
      ownerClosed: () => this.#presence.plainClosed(),
      respond: (input) => this.#auditedAnswer(input),
      stillValid: (principal) => stillValid(env, principal),
    });
    this.#events = new EventLog(
      this.#store,
      {
        broadcast: (json, index) => this.#subscribers.broadcast(json, index),
        toMcp: (event) => {
          for (const sub of this.#store.subscribers()) this.#fanout.send(sub.mcpSessionId, event);
        },
        appended: () => this.#waiters.wake(),
      },
      () => record().sessionId,
    );
    this.#presence = new Presence({
      record,
      save: () => this.#save(),
      store: this.#store,
      graceMs: cfg.callerGraceMs,
      ownerSubscribed: () => this.#subscribers.ownerConnected(),
      countWaiting: () => this.#store.countWaiting(),
      failWaiting: (outcome) => this.#calls.failAll(outcome),
      scheduleAlarm: () => this.#scheduleAlarm(),
    });
    this.#tunnel = new HostTunnel(ctx, {
      placedHost: () => this.#record?.hostId ?? null,
      liveStatus: () => {
        const status = record().status;
        return isLive(status) ? null : status;
      },
      sessionId: () => record().sessionId,
      storedEventSeq: () => record().storedHostEventSeq,
      config: () => this.#callerConfig(),
      pendingMessages: () => this.#store.pendingMessages(),
      callerTool: (callId, tool, args) => {
        this.#lifetime.touch(Date.now());
        return this.#calls.onCall(callId, tool, args);
      },
      cancel: (callId, reason) => this.#calls.cancel(callId, reason),
      events: (events) => this.#agentEvents(events),
      end: (reason, notice) => {
        if (notice && isLive(record().status)) this.#events.emit(notice);
        return this.#finish("ended", reason);
      },
      messageDelivered: (seq) => this.#messageNotices.delivered(seq),
      usage: (report) => this.#usage(report),
      childMessage: (params) => this.#droidSpawn(params),
      ownEvents: (params) => this.#droidEvents(params),
      oublietteTools: async (apiKey) => ({ tools: droidToolList(await this.#listingPrincipal(apiKey)) }),
      oublietteCall: async (apiKey, tool, args) =>
        droidCall(tool, args, {
          env: this.env,
          principal: await this.#keyPrincipal(apiKey),
          mcp: null,
          log: this.#log,
          waitUntil: (promise) => this.ctx.waitUntil(promise),
          viaSession: this.#requireRecord().sessionId,
          runsJobs: true,
        }),
      storedUsage: () => this.#record?.usage ?? null,
      budgetUsd: () => this.#record?.agent?.max_cost_usd ?? null,
      log: this.#log,
    });
    this.#calls = new CallerCalls({
      record,
      store: this.#store,
      events: this.#events,
      sendOutcome: (callId, outcome) => this.#tunnel.sendOutcome(callId, outcome),
      callerMayWait: (now) => this.#presence.mayWait(now),
      scheduleAlarm: () => this.#scheduleAlarm(),
      activity: (now) => {
        this.#lifetime.touch(now);
        this.#save();
      },
      log: this.#log,
    });
    this.#lifetime = new Lifetime({ record, countWaiting: () => this.#store.countWaiting() });
    this.#messageNotices = new MessageNotices({
      store: this.#store,
      delayMs: config(env).messageNoticeMs,
      emit: (body) => this.#events.emit(body),
    });
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    void ctx.blockConcurrencyWhile(async () => {
      this.#alarmAt = await ctx.storage.getAlarm();
    });
    // Subscribers of revocable tokens outlive a hibernation; watch their tokens again.
    if (this.#record) this.#subscribers.watchTokens();
  }

  // ------------------------------------------------------------------ RPC from tools

  async create(input: CreateSessionInput): Promise<Result<SessionInfo>> {
    if (this.#record) return fail("conflict", `session ${input.sessionId} already exists`);
    this.#record = {
      sessionId: input.sessionId,
      projectId: input.projectId,
      workspaceId: input.workspaceId,
      ownerTokenId: input.owner.tokenId,
      callerId: input.caller?.callerId ?? null,
      callerTools: input.caller?.tools ?? [],
      callerTimeoutMs: input.callerTimeoutMs,
      callerPresence: input.callerPresence ?? "stream",
      status: "starting",
      hostId: null,
      runtime: null,
      image: input.image,
      agent: input.agent,
      issuedTokenId: input.droidKey?.issuedTokenId ?? null,
      parentId: input.parent?.sessionId ?? null,
      depth: input.parent?.depth ?? 0,
      children: [],
      usage: null,
      createdAt: new Date().toISOString(),
      endedAt: null,
      lastMessageSeq: 0,
      storedHostEventSeq: 0,
      plainDroppedAt: null,
      idleTimeoutMs: input.idleTimeoutMs,
      maxLifetimeMs: input.maxLifetimeMs,
      lastActivityAt: Date.now(),
      completedTurnSeq: 0,
    };
    this.#save();
    this.#log = createLog({ component: "session", session: input.sessionId });
    this.#attach(input.owner, input.via);
    if (input.caller) {
      this.#events.emit({
        type: "caller_tools_declared",
        caller_id: input.caller.callerId,
        tools: input.caller.tools,
      });
    }
    if (input.prompt !== null) this.#queueMessage(input.prompt);
    const registry = this.#registry();
    // The host is recorded before it is asked to start anything, so its tunnel is recognised.
    const placed = await registry.place({ sessionId: input.sessionId, projectId: input.projectId });
    if (!placed.ok) return this.#failStart(placed);
    const record = this.#requireRecord();
    record.hostId = placed.value.hostId;
    record.runtime = placed.value.runtime;
    this.#save();
    const started = await registry.start({
      sessionId: input.sessionId,
      projectId: input.projectId,
      workspaceId: input.workspaceId,
      workspace: input.workspace,
      project: input.project,
      // The droid's key rides in its environment only (never in an event or a log).
      spec: { agent: input.agent, ...(input.droidKey ? { env: input.droidKey.env } : {}) },
    });
    if (!started.ok) return this.#failStart(started);
    // The lifetime rules run from here on.
    this.#scheduleAlarm();
    if (isLive(record.status)) {
      this.#reportStatus(null);
      this.#events.emit({
        type: "session_started",
        host_id: placed.value.hostId,
        runtime: placed.value.runtime,
      });
    }
    return { ok: true, value: this.#info() };
  }

  async sendMessage(
    input: SendMessageInput,
  ): Promise<Result<{ session: SessionInfo; message_seq: number | null }>> {
    return capture(() => {
      const record = this.#requireWriter(input.principal, "send messages to");
      if (!isLive(record.status)) throw new SessionEndedError(record);
      this.#attach(input.principal, input.via);
      if (input.caller) {
        // Caller tool requests go to the owner, so only the owner declares the tools.
        this.#requireOwner(input.principal, "declare caller tools for");
        record.callerId = input.caller.callerId;
        record.callerTools = input.caller.tools;
        this.#save();
        this.#events.emit({
          type: "caller_tools_declared",
          caller_id: input.caller.callerId,
          tools: input.caller.tools,
        });
        this.#tunnel.sendConfig(this.#callerConfig());
      }
      if (input.callerPresence) this.#setCallerPresence(input.principal, input.callerPresence);
      const seq = input.message === null ? null : this.#queueMessage(input.message);
      return { session: this.#info(), message_seq: seq };
    });
  }

  async getInfo(principal: CallerPrincipal, via: Via | null): Promise<Result<SessionInfo>> {
    return capture(() => {
      this.#requireReader(principal);
      this.#attach(principal, via);
      return this.#info();
    });
  }

  /**
   * The session's events from `sinceIndex` on. With `waitMs`, a read that finds none waits (at
   * most MAX_EVENT_WAIT_MS) until one is appended or the time is up; while the owner waits, its
   * caller counts as present.
   */
  async readEvents(
    principal: CallerPrincipal,
    sinceIndex: number,
    limit: number,
    via: Via | null,
    waitMs = 0,
    // Events typed loosely here: the recursive JSON type is too deep for RPC stub typing.
  ): Promise<Result<EventsPage>> {
    return capture(async () => {
      this.#requireReader(principal);
      this.#attach(principal, via);
      let page = this.#eventsPage(sinceIndex, limit);
      const live = () => isLive(this.#requireRecord().status);
      if (page.events.length > 0 || waitMs <= 0 || !live()) return page;
      const until = Date.now() + Math.min(waitMs, MAX_EVENT_WAIT_MS);
      const owner = principal.tokenId === this.#requireRecord().ownerTokenId;
      if (owner) this.#presence.pollStarted();
      try {
        // The token is checked again every few seconds, and before a page found by waiting is
        // answered, as an open stream's is: a revoked token stops waiting, and gets nothing.
        while (page.events.length === 0 && live() && Date.now() < until) {
          await this.#waiters.next(Math.min(until, Date.now() + TOKEN_RECHECK_MS));
          if (!(await stillValid(this.env, principal))) {
            throw new AppError(
              "unauthorized",
              `token ${principal.tokenId} was revoked while it waited for events`,
            );
          }
          page = this.#eventsPage(sinceIndex, limit);
        }
      } finally {
        if (owner) this.#presence.pollEnded();
      }
      return page;
    });
  }

  /** The session's caller tool requests that wait for an answer, soonest deadline first. */
  async pending(principal: CallerPrincipal, via: Via | null): Promise<Result<PendingRequests>> {
    return capture(() => {
      const record = this.#requireReader(principal);
      this.#attach(principal, via);
      return {
        session_id: record.sessionId,
        status: record.status,
        caller_id: record.callerId,
        caller_presence: record.callerPresence,
        ...this.#openRequests(),
      };
    });
  }

  async end(principal: CallerPrincipal, reason: string): Promise<Result<SessionInfo>> {
    const checked = await capture(() => this.#requireWriter(principal, "end"));
    if (!checked.ok) return checked;
    await this.#finish("ended", reason);
    return { ok: true, value: this.#info() };
  }

  /** A caller's answer to a caller_tool_request: only the owner may answer, once, while the droid waits. */
  async respond(input: RespondInput): Promise<Result<{ request_id: string; status: "delivered" }>> {
    return capture(() => {
      this.#attach(input.principal, input.via);
      return this.#calls.respond(input);
    });
  }

  // ------------------------------------------------------------------ RPC from other objects

  /** The MCP session reports its event stream opened, dropped, or that the session is gone. */
  async presenceChanged(mcpSessionId: string, change: PresenceChange): Promise<void> {
    if (!this.#record) return;
    this.#presence.mcpChanged(mcpSessionId, change);
  }

  /**
   * An event of a job this session's droid started, or one acting on this session: into the log,
   * to every subscriber. An ended session's log is closed; the job's other listeners still hear it.
   */
  async jobEvent(event: JobEvent): Promise<void> {
    if (!this.#record || !isLive(this.#record.status)) return;
    const { at: _at, ...body } = event;
    this.#events.emit(body);
  }

  /**
   * The host registry gave up on this session's host (gone past the grace period, or back
   * without the session): it ends at once, its waiting calls fail with `host_lost`. The placement
   * is already released.
   */
  async hostLost(reason: string): Promise<void> {
    if (!this.#record || !isLive(this.#record.status)) return;
    this.#log.warn("host lost", { host: this.#record.hostId, reason });
    await this.#finish("lost", reason, { placementReleased: true });
  }

  /**
   * Whether the session is live with a turn or a caller tool call in flight. When it is and
   * `scheduleId` is given, that schedule is told (`sessionIdle`) once it no longer is.
   */
  async turnBusy(scheduleId: string | null): Promise<boolean> {
    const record = this.#record;
    if (!record || !isLive(record.status) || !this.#lifetime.busy()) return false;
    const watchers = record.idleWatchers ?? [];
    if (scheduleId !== null && !watchers.includes(scheduleId) && watchers.length < MAX_IDLE_WATCHERS) {
      record.idleWatchers = [...watchers, scheduleId];
      this.#save();
    }
    return true;
  }

  /** The session's status, or null when this object holds no session. */
  async status(): Promise<SessionStatus | null> {
    return this.#record?.status ?? null;
  }

  /** What a child session needs to know of this one, its parent (nesting.ts). */
  async nestInfo(): Promise<Result<NestInfo>> {
    return capture(async () => {
      const record = this.#requireRecord();
      const children = record.children ?? [];
      const statuses = await Promise.all(
        children.map((id) =>
          objects
            .session(this.env, id)
            .liveStatus()
            .catch(() => null),
        ),
      );
      return {
        projectId: record.projectId,
        workspaceId: record.workspaceId,
        depth: record.depth ?? 0,
        liveChildren: statuses.filter((s) => s !== null && isLive(s)).length,
        live: isLive(record.status),
      };
    });
  }

  /** A child this session's droid started: it ends with this session. */
  async addChild(childId: string): Promise<Result<void>> {
    return capture(() => {
      const record = this.#requireRecord();
      record.children = [...(record.children ?? []).filter((id) => id !== childId), childId];
      this.#save();
      // Started just as this one ended: it goes too.
      if (!isLive(record.status))
        void objects.session(this.env, childId).terminate(`its parent session ${record.sessionId} has ended`);
    });
  }

  /** This session's status, or null when it does not exist. */
  async liveStatus(): Promise<SessionStatus | null> {
    return this.#record?.status ?? null;
  }

  /** Interrupts the droid's turn in flight; the session stays (writers of the project may). */
  async interrupt(
    principal: CallerPrincipal,
  ): Promise<Result<{ session: SessionInfo; interrupt_sent: boolean }>> {
    return capture(() => {
      const record = this.#requireWriter(principal, "interrupt");
      if (!isLive(record.status)) throw new SessionEndedError(record);
      const sent = this.#tunnel.sendInterrupt();
      this.#log.info("interrupt asked", { token: principal.tokenId, sent });
      return { session: this.#info(), interrupt_sent: sent };
    });
  }

  /** Ends the session for the system (its project was deleted, say); no principal to check. */
  async terminate(reason: string): Promise<void> {
    if (!this.#record || !isLive(this.#record.status)) return;
    await this.#finish("ended", reason);
  }

  /** The host's token was revoked: its tunnel is cut (the host-loss grace then decides the session). */
  async dropTunnel(reason: string): Promise<void> {
    if (!this.#record) return;
    this.#tunnel.close(4001, reason);
  }

  /** Forgets an ended session entirely (session cleanup); a live one is left alone. */
  async purge(): Promise<boolean> {
    if (this.#record && isLive(this.#record.status)) return false;
    await this.ctx.storage.deleteAll();
    this.#record = null;
    return true;
  }

  // ------------------------------------------------------------------ HTTP: tunnel and subscribers

  override async fetch(request: Request): Promise<Response> {
    if (!this.#record) {
      return Response.json({ error: { code: "not_found", message: "session not found" } }, { status: 404 });
    }
    const url = new URL(request.url);
    if (url.pathname.endsWith("/tunnel")) return this.#tunnel.accept(request);
    if (url.pathname.endsWith("/ws")) return this.#subscribers.acceptWebSocket(request, url);
    if (url.pathname.endsWith("/events")) return this.#subscribers.openSse(request, url);
    return Response.json({ error: { code: "not_found", message: "no such route" } }, { status: 404 });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (!this.#record) return;
    if (HostTunnel.owns(ws)) this.#tunnel.onMessage(ws, message);
    else this.#subscribers.onMessage(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    if (!this.#record) return;
    if (HostTunnel.owns(ws)) this.#tunnel.onClose(ws, code);
    else this.#subscribers.onClose(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    this.#alarmAt = null;
    if (!this.#record) return;
    const now = Date.now();
    this.#calls.expire(now);
    this.#presence.check(now);
    this.#calls.prune(now);
    if (isLive(this.#record.status)) this.#messageNotices.check(now);
    const stop = isLive(this.#record.status) ? this.#lifetime.expired(now) : null;
    if (stop !== null) {
      this.#log.info("session stopped by its lifetime rules", { reason: stop });
      await this.#finish("ended", stop);
    }
    this.#scheduleAlarm();
  }

  // ------------------------------------------------------------------ private

  /** Sets the alarm to the earliest moment anything is due (deadlines, grace periods, pruning). */
  #scheduleAlarm(): void {
    const lifetime = this.#record && isLive(this.#record.status) ? this.#lifetime.nextDue() : null;
    const notices = this.#record && isLive(this.#record.status) ? this.#messageNotices.nextDue() : null;
    const due = [this.#calls.nextDue(), this.#presence.nextDue(), lifetime, notices].filter(
      (t): t is number => t !== null,
    );
    if (due.length === 0) return;
    const at = Math.min(...due);
    if (this.#alarmAt !== null && this.#alarmAt <= at && this.#alarmAt > Date.now()) return;
    this.#alarmAt = at;
    this.ctx.storage.setAlarm(at).catch((err: unknown) => {
      this.#alarmAt = null;
      this.#log.error("could not set the alarm", { error: errorMessage(err) });
    });
  }

  #requireRecord(): SessionRecord {
    if (!this.#record) throw new SessionNotFoundError();
    return this.#record;
  }

  #save(): void {
    this.#store.saveRecord(this.#requireRecord());
  }

  #registry() {
    return objects.hostRegistry(this.env);
  }

  /**
   * The authority a droid has through its own socket, without a key: its session's project, the
   * owner's token id (so what it starts is the owner's too).
   */
  #droidPrincipal(): CallerPrincipal {
    const record = this.#requireRecord();
    return { kind: "caller", tokenId: record.ownerTokenId, scopes: [`project:${record.projectId}`] };
  }

  #droidContext(access: "read" | "write") {
    const record = this.#requireRecord();
    return {
      ...backgroundContext({
        env: this.env,
        principal: this.#droidPrincipal(),
        access,
        what: `act for the droid of session ${record.sessionId}`,
        log: this.#log,
      }),
      viaSession: record.sessionId,
    };
  }

  /** `session_message` from the droid: a child session, by the same path as `oubliette_session spawn`. */
  async #droidSpawn(params: {
    message: string;
    workspace_id?: string | undefined;
    create_workspace?: boolean | undefined;
  }) {
    const record = this.#requireRecord();
    return toRpc(async () =>
      spawnOrResume(
        {
          project_id: record.projectId,
          ...(params.workspace_id !== undefined ? { workspace_id: params.workspace_id } : {}),
          create_workspace: params.create_workspace ?? false,
          new_session: true,
          prompt: params.message,
          source: `session:${record.sessionId}`,
        },
        this.#droidContext("write"),
      ),
    );
  }

  /** `session_events` from the droid: its own session's events, with its children's. */
  async #droidEvents(params: {
    since_index: number;
    limit: number;
    include_children: boolean;
    children_since: Record<string, number>;
  }) {
    const ctx = this.#droidContext("read");
    const own = await toRpc(async () =>
      unwrap(
        (await this.readEvents(
          ctx.principal,
          params.since_index,
          params.limit,
          null,
          0,
        )) as Result<EventsPage>,
      ),
    );
    if (!params.include_children) return own;
    return withChildEvents(ctx, this.#requireRecord().sessionId, own, {
      limit: params.limit,
      childrenSince: params.children_since,
      via: null,
    });
  }

  /** The caller principal of a droid's API key, checked on every use (-32001 when it is not one). */
  /**
   * The principal of the key the droid lists its tools with. A refused key leaves the droid
   * without Oubliette's tools: the session's subscribers are told, once per refusal streak.
   */
  async #listingPrincipal(apiKey: string): Promise<CallerPrincipal> {
    try {
      const principal = await this.#keyPrincipal(apiKey);
      this.#keyRefusalTold = false;
      return principal;
    } catch (err) {
      if (!this.#keyRefusalTold && this.#record && isLive(this.#record.status)) {
        this.#keyRefusalTold = true;
        this.#events.emit({
          type: "system",
          subtype: "oubliette_key_refused",
          message:
            "the droid's API key (OUBLIETTE_API_KEY) was refused (invalid, expired or revoked): it has no Oubliette tools",
        });
      }
      throw err;
    }
  }

  async #keyPrincipal(apiKey: string): Promise<CallerPrincipal> {
    const principal = await authenticate(this.env, apiKey);
    if (principal?.kind !== "caller")
      throw new RpcError(RpcErrorCode.InvalidApiKey, "invalid or expired API key");
    return principal;
  }

  /**
   * A usage report of the host's model proxy (totals: an older or repeated one changes nothing).
   * Each new total becomes a `usage` event; a refused model request (the budget is spent) says why.
   */
  #usage(report: SessionUsageParams): void {
    const record = this.#requireRecord();
    const { refused, ...totals } = report;
    const known = record.usage;
    const newer = !known || totals.requests > known.requests || totals.cost_usd > known.cost_usd;
    if (newer) {
      record.usage = totals;
      this.#save();
      this.#events.emit({ type: "usage", ...totals });
    }
    if (refused !== undefined) this.#events.emit({ type: "error", message: refused });
  }

  /** Agent events from the runner (via the host), idempotent by seq; returns the highest seq stored. */
  #agentEvents(events: AgentEvent[]): number {
    const record = this.#requireRecord();
    let ending: [SessionStatus & ("exited" | "failed"), string] | null = null;
    for (const { seq, ...event } of events) {
      if (seq <= record.storedHostEventSeq) continue;
      record.storedHostEventSeq = seq;
      this.#lifetime.touch(Date.now());
      this.#events.emit(event);
      if (event.type === "completion") {
        record.completedTurnSeq = Math.max(
          record.completedTurnSeq,
          event.message_seq ?? record.lastMessageSeq,
        );
        continue;
      }
      if (event.type !== "droid_status") continue;
      if (event.status === "running" && record.status === "starting") {
        record.status = "running";
        this.#reportStatus(null);
      } else if (event.status === "exited")
        ending = ["exited", `the droid exited with code ${event.exit_code ?? "unknown"}`];
      else if (event.status === "failed") ending = ["failed", event.message ?? "the droid failed"];
    }
    this.#save();
    this.#scheduleAlarm();
    this.#tellIdleWatchers();
    // After the answer (which acknowledges the events to the runner) has gone out.
    if (ending) {
      const [status, reason] = ending;
      setTimeout(() => void this.#finish(status, reason), 0);
    }
    return record.storedHostEventSeq;
  }

  #failStart(result: Result<unknown> & { ok: false }): Result<SessionInfo> {
    const record = this.#requireRecord();
    if (isLive(record.status)) {
      record.status = "failed";
      record.endedAt = new Date().toISOString();
      this.#save();
      this.#reportStatus(result.error.message);
      this.#events.emit({ type: "session_ended", reason: result.error.message });
    }
    // A host that was placed but failed to start frees its place.
    if (record.hostId) void this.#releaseHost(record.sessionId, result.error.message);
    return { ok: false, error: result.error };
  }

  /**
   * Ends the session's life (droid exited or failed, a caller ended it, its host was lost):
   * waiting calls fail at once, the event is written, the tunnel and subscribers close, and the
   * host is asked to stop the droid (unless the placement is already released). Idempotent.
   */
  async #finish(
    status: Exclude<SessionStatus, "starting" | "running">,
    reason: string,
    options: { placementReleased?: boolean } = {},
  ): Promise<void> {
    const record = this.#requireRecord();
    if (!isLive(record.status)) return;
    record.status = status;
    record.endedAt = new Date().toISOString();
    this.#save();
    this.#reportStatus(reason);
    const why = status === "lost" ? "host_lost" : "session_ended";
    this.#calls.failAll(failure(why, `session ${record.sessionId} ended: ${reason}`));
    this.#events.emit({ type: "session_ended", reason });
    this.#tellIdleWatchers();
    if (record.issuedTokenId) await this.#revokeIssuedKey(record.issuedTokenId);
    // Its children end with it (each ends its own, and so on down).
    for (const childId of record.children ?? [])
      this.ctx.waitUntil(
        objects
          .session(this.env, childId)
          .terminate(`its parent session ${record.sessionId} ended: ${reason}`)
          .catch((err: unknown) =>
            this.#log.warn("could not end a child session", { child: childId, error: errorMessage(err) }),
          ),
      );
    this.#tunnel.close(1000, "session ended");
    this.#subscribers.closeAll(1000, "session ended");
    if (record.hostId && !options.placementReleased) await this.#releaseHost(record.sessionId, reason);
  }

  /** The key issued for this session's droid ends with it. */
  async #revokeIssuedKey(tokenId: string): Promise<void> {
    try {
      const revoked = await objects.tokens(this.env).revoke(tokenId);
      if (!revoked.ok)
        this.#log.warn("could not revoke the session's key", {
          token: tokenId,
          error: revoked.error.message,
        });
    } catch (err) {
      this.#log.warn("could not revoke the session's key", { token: tokenId, error: errorMessage(err) });
    }
  }

  async #releaseHost(sessionId: string, reason: string): Promise<void> {
    try {
      const stopped = await this.#registry().stopSession({ sessionId, reason });
      if (!stopped.ok) this.#log.warn("the host did not confirm the stop", { error: stopped.error.message });
    } catch (err) {
      this.#log.warn("could not ask the host to stop the droid", { error: errorMessage(err) });
    }
  }

  /** An answer over a plain WebSocket: a mutating call outside the tools, so audited here. */
  #auditedAnswer(input: RespondInput): unknown {
    const entry = {
      at: Date.now(),
      token_id: input.principal.tokenId,
      action: "ws caller_tool_response",
      target: this.#requireRecord().sessionId,
      outcome: "ok",
    };
    try {
      return this.#calls.respond(input);
    } catch (err) {
      entry.outcome = err instanceof AppError ? err.code : "internal";
      throw err;
    } finally {
      objects
        .audit(this.env)
        .record(entry)
        .catch((err: unknown) =>
          this.#log.error("could not write the audit log", { error: errorMessage(err) }),
        );
    }
  }

  /** Tells the schedules waiting for this session that it is idle (best effort: they re-ask at their next alarm). */
  #tellIdleWatchers(): void {
    const record = this.#requireRecord();
    const watchers = record.idleWatchers ?? [];
    if (watchers.length === 0 || (isLive(record.status) && this.#lifetime.busy())) return;
    record.idleWatchers = [];
    this.#save();
    for (const scheduleId of watchers) {
      objects
        .schedule(this.env, scheduleId)
        .sessionIdle(record.sessionId)
        .catch((err: unknown) =>
          this.#log.warn("could not tell a schedule the session is idle", {
            schedule: scheduleId,
            error: errorMessage(err),
          }),
        );
    }
  }

  /** Tells the project's index the session's status (best effort: the project re-asks when it matters). */
  #reportStatus(reason: string | null): void {
    const record = this.#requireRecord();
    objects
      .project(this.env, record.projectId)
      .sessionStatus({ sessionId: record.sessionId, status: record.status, reason })
      .catch((err: unknown) =>
        this.#log.warn("could not report the status to the project", { error: errorMessage(err) }),
      );
  }

  #queueMessage(text: string): number {
    const record = this.#requireRecord();
    record.lastMessageSeq += 1;
    this.#lifetime.touch(Date.now());
    const seq = record.lastMessageSeq;
    this.#store.queueMessage(seq, text, Date.now());
    this.#save();
    this.#events.emit({ type: "message_sent", seq, text });
    this.#scheduleAlarm();
    this.#tunnel.sendMessage(seq, text);
    return seq;
  }

  #callerConfig(): CallerToolsConfig {
    const record = this.#requireRecord();
    return {
      caller_id: record.callerId,
      tools: record.callerTools,
      timeout_ms: record.callerTimeoutMs,
      backstop_ms: record.callerTimeoutMs + config(this.env).reconnectBudgetMs,
    };
  }

  /** Subscribes the owner's MCP session to this session's events. */
  #attach(principal: CallerPrincipal, via: Via | null): void {
    if (!via || principal.tokenId !== this.#requireRecord().ownerTokenId) return;
    this.#presence.attachMcp(via);
  }

  #info(): SessionInfo {
    const r = this.#requireRecord();
    return {
      session_id: r.sessionId,
      project_id: r.projectId,
      workspace_id: r.workspaceId,
      status: r.status,
      host_id: r.hostId,
      runtime: r.runtime,
      parent_session_id: r.parentId ?? null,
      depth: r.depth ?? 0,
      children: r.children ?? [],
      agent: r.agent?.runtime ?? "scripted",
      model: r.agent?.model ?? null,
      usage: r.usage ?? null,
      max_cost_usd: r.agent?.max_cost_usd ?? null,
      caller_id: r.callerId,
      caller_tools: r.callerTools.map((t) => t.name),
      caller_timeout_ms: r.callerTimeoutMs,
      caller_presence: r.callerPresence,
      ...this.#openRequests(),
      busy: this.#lifetime.busy(),
      idle_timeout_seconds: Math.round(r.idleTimeoutMs / 1000),
      max_lifetime_seconds: Math.round(r.maxLifetimeMs / 1000),
      next_index: this.#events.nextIndex,
      created_at: r.createdAt,
      ended_at: r.endedAt,
    };
  }

  #eventsPage(sinceIndex: number, limit: number): EventsPage {
    const events = this.#events.read(sinceIndex, limit);
    const last = events.at(-1);
    const next = last ? last.index + 1 : Math.min(sinceIndex, this.#events.nextIndex);
    return {
      events: events as Record<string, unknown>[],
      next_index: next,
      status: this.#requireRecord().status,
    };
  }

  /** The waiting calls as a caller sees them (the first MAX_LISTED_REQUESTS) and their count. */
  #openRequests(): Pick<SessionInfo, "pending_caller_requests" | "open_requests"> {
    return {
      pending_caller_requests: this.#store.countWaiting(),
      open_requests: this.#store.waitingCalls(MAX_LISTED_REQUESTS).map((call) => ({
        request_id: call.callId,
        tool: call.tool,
        arguments: call.arguments,
        deadline: new Date(call.deadline).toISOString(),
      })),
    };
  }

  /** The owner chose what the caller's absence does to waiting calls. */
  #setCallerPresence(principal: CallerPrincipal, presence: CallerPresence): void {
    const record = this.#requireOwner(principal, "choose caller_presence for");
    if (presence === record.callerPresence) return;
    record.callerPresence = presence;
    this.#save();
    this.#log.info("caller presence changed", { caller_presence: record.callerPresence });
    // Back to `stream`: calls of a caller that is gone fail now (or when its grace period ends).
    this.#presence.check(Date.now());
    this.#scheduleAlarm();
  }

  #requireOwner(principal: CallerPrincipal, what: string): SessionRecord {
    const record = this.#requireWriter(principal, what);
    if (principal.tokenId !== record.ownerTokenId) {
      this.#log.warn("refused a non-owner", { token: principal.tokenId, action: what });
      throw new NotOwnerError(record, what);
    }
    return record;
  }

  /**
   * Readers and writers: the session's project is checked against the principal's scopes on
   * every access (a token scoped to another project, or read-only, is refused even if it owns
   * the session).
   */
  #requireReader(principal: CallerPrincipal): SessionRecord {
    const record = this.#requireRecord();
    requireAccess(principal, "read", project(record.projectId), `read session ${record.sessionId}`);
    return record;
  }

  #requireWriter(principal: CallerPrincipal, what: string): SessionRecord {
    const record = this.#requireRecord();
    requireAccess(principal, "write", project(record.projectId), `${what} session ${record.sessionId}`);
    return record;
  }
}

/** Runs work for the droid's socket: an AppError becomes an RpcError the droid can read (-32000, its code as the reason). */
async function toRpc<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError)
      throw new RpcError(RpcErrorCode.ServerError, err.message, { reason: err.code });
    throw err;
  }
}
