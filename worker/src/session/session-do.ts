import { DurableObject } from "cloudflare:workers";
import type { CallerToolOutcome, CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { SessionEvent } from "../../../protocol/events.js";
import { type SessionToHost, TUNNEL_PROTOCOL_VERSION } from "../../../protocol/tunnel.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { capture, fail, type Result } from "../errors.js";
import { createLog, errorMessage, type Log } from "../log.js";
import { HostChannel } from "./host-channel.js";
import { McpFanout } from "./mcp-fanout.js";
import { failure, seconds } from "./outcomes.js";
import { Presence } from "./presence.js";
import { NotOwnerError, SessionEndedError, SessionNotFoundError } from "./session-errors.js";
import { isLive, type SessionInfo, type SessionRecord } from "./session-record.js";
import { SessionRequests } from "./session-requests.js";
import { type CallRow, SessionStore } from "./session-store.js";
import { SubscriberSockets } from "./subscriber-sockets.js";
import type { CreateSessionInput, PresenceChange, RespondInput, SendMessageInput, Via } from "./types.js";

/** How long a finished call is remembered (to refuse a second answer and to resend its result). */
const DONE_CALL_RETENTION_MS = 10 * 60_000;

/** Event body before the session stamps it with its id, index and time. */
export type NewEvent = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, "session_id" | "index" | "ts">
    : never
  : never;

/**
 * One per agent session. Owns: the session record (owner, caller id and tools, status), pending
 * caller tool calls with their deadlines (one alarm), the event log, fan-out of every event to
 * the owner's MCP sessions, SSE and WebSocket subscribers, and the host-agent's session tunnel.
 */
export class SessionDurableObject extends DurableObject<Env> {
  readonly store: SessionStore;
  log: Log;
  readonly presence: Presence;
  readonly host: HostChannel;
  readonly subscribers: SubscriberSockets;
  readonly #fanout: McpFanout;
  #record: SessionRecord | null;
  #nextIndex: number;
  #alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SessionStore(ctx.storage.sql);
    this.#record = this.store.loadRecord();
    this.#nextIndex = this.store.nextEventIndex();
    this.log = createLog({ component: "session", session: this.#record?.sessionId });
    this.presence = new Presence(this);
    this.host = new HostChannel(this);
    this.subscribers = new SubscriberSockets(this);
    this.#fanout = new McpFanout(env, this.log, (id) => this.presenceChanged(id, "gone"));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    ctx.blockConcurrencyWhile(async () => {
      this.#alarmAt = await ctx.storage.getAlarm();
    });
  }

  /** The object's state, for the parts (tunnel, subscribers) that accept WebSockets. */
  get state(): DurableObjectState {
    return this.ctx;
  }

  get config() {
    return config(this.env);
  }

  /** The session record; throws not_found when this object holds no session. */
  get record(): SessionRecord {
    if (!this.#record) throw new SessionNotFoundError();
    return this.#record;
  }

  save(): void {
    this.store.saveRecord(this.record);
  }

  // ------------------------------------------------------------------ RPC from tools

  async create(input: CreateSessionInput): Promise<Result<SessionInfo>> {
    if (this.#record) return fail("conflict", `session ${input.sessionId} already exists`);
    const now = new Date().toISOString();
    this.#record = {
      sessionId: input.sessionId,
      projectId: input.projectId,
      ownerTokenId: input.owner.tokenId,
      callerId: input.caller?.callerId ?? null,
      callerTools: input.caller?.tools ?? [],
      callerTimeoutMs: input.callerTimeoutMs,
      status: "starting",
      hostId: null,
      runtime: null,
      image: input.image,
      createdAt: now,
      endedAt: null,
      lastMessageSeq: 0,
      storedHostEventSeq: 0,
      plainDroppedAt: null,
    };
    this.save();
    this.log = createLog({ component: "session", session: input.sessionId });
    this.attach(input.owner, input.via);
    if (input.caller)
      this.emit({
        type: "caller_tools_declared",
        caller_id: input.caller.callerId,
        tools: input.caller.tools,
      });
    if (input.prompt !== null) this.queueMessage(input.prompt);
    const registry = this.env.HOSTS.get(this.env.HOSTS.idFromName("global"));
    const placed = await registry.startSession({
      sessionId: input.sessionId,
      spec: input.image ? { image: input.image } : {},
    });
    const record = this.record;
    if (!placed.ok) {
      record.status = "failed";
      record.endedAt = new Date().toISOString();
      this.emit({ type: "session_ended", reason: placed.error.message });
      this.save();
      return placed;
    }
    record.hostId = placed.value.hostId;
    record.runtime = placed.value.runtime;
    this.emit({ type: "session_started", host_id: placed.value.hostId, runtime: placed.value.runtime });
    this.save();
    return { ok: true, value: this.info() };
  }

  async sendMessage(
    input: SendMessageInput,
  ): Promise<Result<{ session: SessionInfo; message_seq: number | null }>> {
    return capture(() => {
      const record = this.requireOwner(input.principal, "send messages to");
      if (!isLive(record.status)) throw new SessionEndedError(record);
      this.attach(input.principal, input.via);
      if (input.caller) {
        record.callerId = input.caller.callerId;
        record.callerTools = input.caller.tools;
        this.save();
        this.emit({
          type: "caller_tools_declared",
          caller_id: input.caller.callerId,
          tools: input.caller.tools,
        });
        this.host.send({ type: "caller_tools_config", config: this.callerConfig() });
      }
      const seq = input.message === null ? null : this.queueMessage(input.message);
      return { session: this.info(), message_seq: seq };
    });
  }

  async getInfo(principal: CallerPrincipal, via: Via | null): Promise<Result<SessionInfo>> {
    return capture(() => {
      this.requireReader(principal);
      this.attach(principal, via);
      return this.info();
    });
  }

  async readEvents(
    principal: CallerPrincipal,
    sinceIndex: number,
    limit: number,
    via: Via | null,
    // Events typed loosely here: the recursive JSON type is too deep for RPC stub typing.
  ): Promise<Result<{ events: Record<string, unknown>[]; next_index: number; status: string }>> {
    return capture(() => {
      const record = this.requireReader(principal);
      this.attach(principal, via);
      const events = this.store
        .eventsSince(sinceIndex, limit)
        .map((body) => JSON.parse(body) as SessionEvent);
      const last = events.at(-1);
      const next = last ? last.index + 1 : Math.min(sinceIndex, this.#nextIndex);
      return { events: events as Record<string, unknown>[], next_index: next, status: record.status };
    });
  }

  async end(principal: CallerPrincipal, reason: string): Promise<Result<SessionInfo>> {
    const checked = await capture(() => this.requireWriter(principal));
    if (!checked.ok) return checked;
    await this.finish("ended", reason);
    this.host.close(1000, "session ended");
    this.subscribers.closeAll(1000, "session ended");
    return { ok: true, value: this.info() };
  }

  /** A caller's answer to a caller_tool_request: only the owner may answer, and only once. */
  async respond(input: RespondInput): Promise<Result<{ request_id: string; status: "delivered" }>> {
    return capture(() => this.requests.respond(input));
  }

  // ------------------------------------------------------------------ RPC from MCP sessions

  /** The MCP session reports its event stream opened, dropped, or that the session is gone. */
  async presenceChanged(mcpSessionId: string, change: PresenceChange): Promise<void> {
    if (!this.#record) return;
    this.presence.mcpChanged(mcpSessionId, change);
  }

  // ------------------------------------------------------------------ HTTP: tunnel and subscribers

  override async fetch(request: Request): Promise<Response> {
    if (!this.#record)
      return Response.json({ error: { code: "not_found", message: "session not found" } }, { status: 404 });
    const url = new URL(request.url);
    if (url.pathname.endsWith("/tunnel")) return this.host.accept(request);
    if (url.pathname.endsWith("/ws")) return this.subscribers.acceptWebSocket(request, url);
    if (url.pathname.endsWith("/events")) return this.subscribers.openSse(request, url);
    return Response.json({ error: { code: "not_found", message: "no such route" } }, { status: 404 });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (HostChannel.owns(ws)) this.host.onMessage(ws, message);
    else this.subscribers.onMessage(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    if (HostChannel.owns(ws)) this.host.onClose(ws, code);
    else this.subscribers.onClose(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    this.#alarmAt = null;
    if (!this.#record) return;
    const now = Date.now();
    this.requests.expire(now);
    this.presence.check(now);
    this.store.pruneDoneCalls(now - DONE_CALL_RETENTION_MS);
    this.scheduleAlarm();
  }

  /** Sets the alarm to the earliest moment anything is due (deadlines, grace periods, pruning). */
  scheduleAlarm(): void {
    const due = [
      this.store.earliestDeadline(),
      this.presence.nextCheck(),
      (() => {
        const doneAt = this.store.earliestDoneAt();
        return doneAt === null ? null : doneAt + DONE_CALL_RETENTION_MS;
      })(),
    ].filter((t): t is number => t !== null);
    if (due.length === 0) return;
    const at = Math.min(...due);
    if (this.#alarmAt !== null && this.#alarmAt <= at && this.#alarmAt > Date.now()) return;
    this.#alarmAt = at;
    this.ctx.storage.setAlarm(at).catch((err: unknown) => {
      this.#alarmAt = null;
      this.log.error("could not set the alarm", { error: errorMessage(err) });
    });
  }

  // ------------------------------------------------------------------ shared by the parts

  #requests: SessionRequests | undefined;
  get requests(): SessionRequests {
    this.#requests ??= new SessionRequests(this);
    return this.#requests;
  }

  /**
   * Appends an event to the log and fans it out to every subscriber. The fan-out is sent before
   * the append is written so it does not wait for the storage commit (an output gate holds only
   * messages sent after a write); a crash in between loses at most a log entry whose notification
   * went out, and a caller answering it gets `unknown_request` while the host re-sends the call.
   */
  emit(body: NewEvent): SessionEvent {
    const record = this.record;
    const event = {
      ...body,
      session_id: record.sessionId,
      index: this.#nextIndex,
      ts: new Date().toISOString(),
    } as SessionEvent;
    this.#nextIndex += 1;
    const json = JSON.stringify(event);
    this.subscribers.broadcast(json, event.index);
    for (const sub of this.store.subscribers()) this.#fanout.send(sub.mcpSessionId, event);
    this.store.appendEvent(event);
    return event;
  }

  callerConfig(): CallerToolsConfig {
    const record = this.record;
    return { caller_id: record.callerId, tools: record.callerTools, timeout_ms: record.callerTimeoutMs };
  }

  /**
   * Ends the session's life (droid exited or failed, or a caller ended it): waiting calls fail and
   * the host is asked to stop the droid and remove its container. Idempotent.
   */
  async finish(status: "exited" | "failed" | "ended", reason: string): Promise<void> {
    const record = this.record;
    if (!isLive(record.status)) return;
    record.status = status;
    record.endedAt = new Date().toISOString();
    this.save();
    this.requests.failAll(failure("session_ended", `session ${record.sessionId} ended: ${reason}`));
    this.emit({ type: "session_ended", reason });
    if (!record.hostId) return;
    const registry = this.env.HOSTS.get(this.env.HOSTS.idFromName("global"));
    try {
      const stopped = await registry.stopSession({ sessionId: record.sessionId, reason });
      if (!stopped.ok) this.log.warn("the host did not confirm the stop", { error: stopped.error.message });
    } catch (err) {
      this.log.warn("could not ask the host to stop the droid", { error: errorMessage(err) });
    }
  }

  /** Subscribes the owner's MCP session to this session's events. */
  attach(principal: CallerPrincipal, via: Via | null): void {
    if (!via || principal.tokenId !== this.record.ownerTokenId) return;
    this.presence.attachMcp(via);
  }

  info(): SessionInfo {
    const r = this.record;
    return {
      session_id: r.sessionId,
      project_id: r.projectId,
      status: r.status,
      host_id: r.hostId,
      runtime: r.runtime,
      caller_id: r.callerId,
      caller_tools: r.callerTools.map((t) => t.name),
      caller_timeout_ms: r.callerTimeoutMs,
      pending_caller_requests: this.store.countWaiting(),
      next_index: this.#nextIndex,
      created_at: r.createdAt,
      ended_at: r.endedAt,
    };
  }

  sendResult(call: Pick<CallRow, "callId">, outcome: CallerToolOutcome): void {
    this.host.send({ type: "caller_tool_result", call_id: call.callId, outcome });
  }

  welcomeFrame(): SessionToHost {
    return {
      type: "session_welcome",
      v: TUNNEL_PROTOCOL_VERSION,
      session_id: this.record.sessionId,
      stored_event_seq: this.record.storedHostEventSeq,
    };
  }

  describeTimeout(): string {
    return seconds(this.record.callerTimeoutMs);
  }

  // ------------------------------------------------------------------ private

  private queueMessage(text: string): number {
    const record = this.record;
    record.lastMessageSeq += 1;
    const seq = record.lastMessageSeq;
    this.store.queueMessage(seq, text);
    this.save();
    this.emit({ type: "message_sent", seq, text });
    this.host.send({ type: "droid_message", seq, text });
    return seq;
  }

  private requireOwner(principal: CallerPrincipal, what: string): SessionRecord {
    const record = this.record;
    if (principal.tokenId !== record.ownerTokenId) {
      this.log.warn("refused a non-owner", { token: principal.tokenId, action: what });
      throw new NotOwnerError(record, what);
    }
    return record;
  }

  private requireReader(principal: CallerPrincipal): SessionRecord {
    const record = this.record;
    if (principal.tokenId === record.ownerTokenId) return record;
    if (principal.scopes.some((s) => s === "admin" || s === "admin:ro")) return record;
    throw new NotOwnerError(record, "read");
  }

  private requireWriter(principal: CallerPrincipal): SessionRecord {
    const record = this.record;
    if (principal.tokenId === record.ownerTokenId || principal.scopes.includes("admin")) return record;
    throw new NotOwnerError(record, "end");
  }
}
