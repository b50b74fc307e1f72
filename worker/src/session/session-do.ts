import { DurableObject } from "cloudflare:workers";
import type { GitEvent } from "../../../protocol/events.js";
import type { SetupEvent } from "../../../protocol/setup.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { capture, type Result } from "../errors.js";
import type { JobEvent } from "../jobs/job-events.js";
import type { ApprovalResponseInput } from "./approval-records.js";
import { HostTunnel } from "./host-tunnel.js";
import type { NestInfo } from "./nesting.js";
import { requireReader, requireWriter } from "./session-access.js";
import { SessionEndedError } from "./session-errors.js";
import type { ProjectMoved } from "./session-lifecycle.js";
import { type SessionParts, wireSession } from "./session-parts.js";
import { isLive, type PendingRequests, type SessionInfo, type SessionStatus } from "./session-record.js";
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
 * The parts are made and wired in session-parts.ts. Every public method is an RPC entry point;
 * everything else is a part's.
 */
export class SessionDurableObject extends DurableObject<Env> {
  readonly #p: SessionParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#p = wireSession(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    // Subscribers of revocable tokens outlive a hibernation; watch their tokens again.
    if (this.#p.state.current) this.#p.subscribers.watchTokens();
  }

  // ------------------------------------------------------------------ RPC from tools

  async create(input: CreateSessionInput): Promise<Result<SessionInfo & { moved?: ProjectMoved }>> {
    if (this.#p.state.current)
      return { ok: false, error: { code: "conflict", message: `session ${input.sessionId} already exists` } };
    const started = await this.#p.lifecycle.start(input);
    if (!started.ok) return started;
    const { moved } = started.value;
    return { ok: true, value: { ...this.#p.views.info(), ...(moved ? { moved } : {}) } };
  }

  async sendMessage(
    input: SendMessageInput,
  ): Promise<Result<{ session: SessionInfo; message_seq: number | null }>> {
    return capture(() => {
      const seq = this.#p.input.send(input);
      return { session: this.#p.views.info(), message_seq: seq };
    });
  }

  async getInfo(principal: CallerPrincipal, via: Via | null): Promise<Result<SessionInfo>> {
    return capture(() => {
      this.#reader(principal, via);
      return this.#p.views.info();
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
      return this.#p.views.waitForEvents(principal, sinceIndex, limit, waitMs);
    });
  }

  /** The session's caller tool requests that wait for an answer, soonest deadline first. */
  async pending(principal: CallerPrincipal, via: Via | null): Promise<Result<PendingRequests>> {
    return capture(() => {
      this.#reader(principal, via);
      return this.#p.views.pending();
    });
  }

  async end(principal: CallerPrincipal, reason: string): Promise<Result<SessionInfo>> {
    const checked = await capture(() => requireWriter(this.#p.state.require(), principal, "end"));
    if (!checked.ok) return checked;
    await this.#p.lifecycle.finish("ended", reason);
    return { ok: true, value: this.#p.views.info() };
  }

  /** A caller's answer to a caller_tool_request: only the owner may answer, once, while the droid waits. */
  async respond(input: RespondInput): Promise<Result<{ request_id: string; status: "delivered" }>> {
    return capture(() => {
      this.#p.input.attach(input.principal, input.via);
      return this.#p.calls.respond(input);
    });
  }

  /** A person's answer to an approval_request: a writer of the project, once, while the agent waits. */
  async answerApproval(
    input: ApprovalResponseInput,
  ): Promise<Result<{ request_id: string; decision: "allow" | "deny"; scope: string }>> {
    return capture(() => this.#p.approvals.respond(input));
  }

  /** Interrupts the droid's turn in flight; the session stays (writers of the project may). */
  async interrupt(
    principal: CallerPrincipal,
  ): Promise<Result<{ session: SessionInfo; interrupt_sent: boolean }>> {
    return capture(() => {
      const record = requireWriter(this.#p.state.require(), principal, "interrupt");
      if (!isLive(record.status)) throw new SessionEndedError(record);
      const sent = this.#p.tunnel.sendInterrupt();
      this.#p.state.log.info("interrupt asked", { token: principal.tokenId, sent });
      return { session: this.#p.views.info(), interrupt_sent: sent };
    });
  }

  // ------------------------------------------------------------------ RPC from other objects

  /** The MCP session reports its event stream opened, dropped, or that the session is gone. */
  async presenceChanged(mcpSessionId: string, change: PresenceChange): Promise<void> {
    if (!this.#p.state.current) return;
    this.#p.presence.mcpChanged(mcpSessionId, change);
  }

  /**
   * An event of a job this session's droid started, or one acting on this session: into the log,
   * to every subscriber. An ended session's log is closed; the job's other listeners still hear it.
   */
  async jobEvent(event: JobEvent): Promise<void> {
    if (!this.#p.state.live) return;
    const { at: _at, ...body } = event;
    this.#p.events.emit(body);
  }

  /** The workspace's setup ran on demand (`workspace setup`): its end, into the log, to every subscriber. */
  async setupEvent(event: SetupEvent): Promise<void> {
    if (this.#p.state.live) this.#p.events.emit(event);
  }

  /** A git event of this session's workspace (`workspace push` / `pull_request`): into the log, to every subscriber. */
  async gitEvent(event: GitEvent): Promise<void> {
    if (this.#p.state.live) this.#p.events.emit(event);
  }

  /**
   * The host registry gave up on this session's host (gone past the grace period, or back
   * without the session): it ends at once, its waiting calls fail with `host_lost`. The placement
   * is already released.
   */
  async hostLost(reason: string): Promise<void> {
    if (!this.#p.state.live) return;
    this.#p.state.log.warn("host lost", { host: this.#p.state.current?.hostId, reason });
    await this.#p.lifecycle.finish("lost", reason, { placementReleased: true });
  }

  /** Whether the session is busy; a busy one tells schedule `scheduleId` once it is idle. */
  async turnBusy(scheduleId: string | null): Promise<boolean> {
    return this.#p.lifecycle.turnBusy(scheduleId);
  }

  /** The session's status, or null when this object holds no session. */
  async status(): Promise<SessionStatus | null> {
    return this.#p.state.current?.status ?? null;
  }

  /** What a child session needs to know of this one, its parent (nesting.ts). */
  async nestInfo(): Promise<Result<NestInfo>> {
    return capture(() => this.#p.lifecycle.nestInfo());
  }

  /** A child this session's droid started: it ends with this session. */
  async addChild(childId: string): Promise<Result<void>> {
    return capture(() => this.#p.lifecycle.addChild(childId));
  }

  /** This session's status, or null when it does not exist. */
  async liveStatus(): Promise<SessionStatus | null> {
    return this.#p.state.current?.status ?? null;
  }

  /** Ends the session for the system (its project was deleted, say); no principal to check. */
  async terminate(reason: string): Promise<void> {
    if (!this.#p.state.live) return;
    await this.#p.lifecycle.finish("ended", reason);
  }

  /** The host's token was revoked: its tunnel is cut (the host-loss grace then decides the session). */
  async dropTunnel(reason: string): Promise<void> {
    if (!this.#p.state.current) return;
    this.#p.tunnel.close(4001, reason);
  }

  /** Forgets an ended session entirely (session cleanup); a live one is left alone. */
  async purge(): Promise<boolean> {
    if (this.#p.state.live) return false;
    await this.ctx.storage.deleteAll();
    this.#p.state.forget();
    return true;
  }

  // ------------------------------------------------------------------ HTTP: tunnel and subscribers

  override async fetch(request: Request): Promise<Response> {
    if (!this.#p.state.current) {
      return Response.json({ error: { code: "not_found", message: "session not found" } }, { status: 404 });
    }
    const url = new URL(request.url);
    if (url.pathname.endsWith("/tunnel")) return this.#p.tunnel.accept(request);
    if (url.pathname.endsWith("/ws")) return this.#p.subscribers.acceptWebSocket(request, url);
    if (url.pathname.endsWith("/events")) return this.#p.subscribers.openSse(request, url);
    return Response.json({ error: { code: "not_found", message: "no such route" } }, { status: 404 });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (!this.#p.state.current) return;
    if (HostTunnel.owns(ws)) this.#p.tunnel.onMessage(ws, message);
    else this.#p.subscribers.onMessage(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    if (!this.#p.state.current) return;
    if (HostTunnel.owns(ws)) this.#p.tunnel.onClose(ws, code);
    else this.#p.subscribers.onClose(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    this.#p.alarm.fired();
    if (!this.#p.state.current) return;
    const now = Date.now();
    this.#p.calls.expire(now);
    this.#p.approvals.expire(now);
    this.#p.presence.check(now);
    this.#p.calls.prune(now);
    this.#p.approvals.prune(now);
    if (this.#p.state.live) this.#p.messageNotices.check(now);
    const stop = this.#p.state.live ? this.#p.lifetime.expired(now) : null;
    if (stop !== null) {
      this.#p.state.log.info("session stopped by its lifetime rules", { reason: stop });
      await this.#p.lifecycle.finish("ended", stop);
    }
    this.#p.alarm.schedule();
  }

  // ------------------------------------------------------------------ private

  /** A reader of the session; the owner's MCP session follows it from here on. */
  #reader(principal: CallerPrincipal, via: Via | null): void {
    requireReader(this.#p.state.require(), principal);
    this.#p.input.attach(principal, via);
  }
}
