import { DurableObject } from "cloudflare:workers";
import {
  type InitializeRequest,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type LoggingLevel,
} from "@modelcontextprotocol/sdk/types.js";
import { alwaysDelivered, loggerFor, type SessionEvent } from "../../../protocol/events.js";
import { parseJson } from "../../../protocol/json.js";
import { clip } from "../../../protocol/rpc/errors.js";
import { principalOf } from "../auth/principal-header.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { stillValid } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { type JobEvent, jobEventLevel, jobEventMessage } from "../jobs/job-events.js";
import { createLog, errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import { TOKEN_RECHECK_MS } from "../session/subscriber-sockets.js";
import type { PresenceChange } from "../session/types.js";
import { SSE_HEADERS, SseStream } from "../streams/sse.js";
import { AnswerStreams } from "./answer-streams.js";
import { ApprovalElicitations } from "./approval-elicitations.js";
import { InFlightCalls } from "./in-flight-calls.js";
import {
  type HttpReply,
  McpErrorCode,
  RpcError,
  rpcErrorReply,
  rpcErrorResponse,
  toResponse,
} from "./json-rpc.js";
import { MCP_META, type McpMeta, passesLevel } from "./mcp-meta.js";
import { handleMethod } from "./methods.js";
import { McpStore } from "./outbox.js";
import { PostReply } from "./post-reply.js";
import { unsupportedVersion } from "./protocol-version.js";
import { newMcpSession } from "./session-initialize.js";

/** What the Worker passes for a POST /mcp. */
export interface McpPostInput {
  principal: CallerPrincipal;
  sessionId: string;
  /** The Worker minted `sessionId` for this request (only initialize may start a session). */
  fresh: boolean;
  contentType: string;
  /** The client's Accept lists text/event-stream: an answer may come as an SSE stream. */
  acceptsSse: boolean;
  protocolVersion: string | null;
  body: string;
}

/** An MCP session with no stream and no requests for this long is terminated. */
const IDLE_TTL_MS = 60 * 60_000;
/**
 * One per MCP Streamable HTTP session (`Mcp-Session-Id`). Owns the session's protocol state,
 * its GET event stream (keep-alives, Last-Event-ID resumption from a bounded outbox) and the
 * list of droid sessions it receives events from; tells those sessions when its stream opens,
 * drops, or the session ends, so a droid waiting on this caller learns it is gone.
 */
export class McpSessionDurableObject extends DurableObject<Env> {
  readonly #store: McpStore;
  readonly #answers = new AnswerStreams();
  readonly #calls = new InFlightCalls();
  readonly #elicitations: ApprovalElicitations;
  #meta: McpMeta | null;
  #stream: SseStream | null = null;
  #log: Log;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new McpStore(ctx.storage);
    this.#meta = this.#store.getMeta("session", MCP_META);
    this.#log = createLog({ component: "mcp", mcp_session: this.#meta?.sessionId });
    this.#elicitations = new ApprovalElicitations({
      sql: ctx.storage.sql,
      env,
      log: () => this.#log,
      send: (message) => this.#send(message),
    });
    void ctx.blockConcurrencyWhile(() => this.#store.load());
  }

  /**
   * GET: the session's event stream, or a POST's answer that turned into a stream (streamed
   * responses, so they stay fetches).
   */
  override async fetch(request: Request): Promise<Response> {
    const principal = principalOf(request);
    if (principal?.kind !== "caller") return new Response("forbidden", { status: 403 });
    if (request.method !== "GET") return new Response("method not allowed", { status: 405 });
    const answer = /^\/mcp\/answers\/([0-9a-f-]{36})$/.exec(new URL(request.url).pathname);
    if (answer?.[1]) return this.#streamedAnswer(answer[1], principal);
    return this.#get(request, principal);
  }

  /** POST /mcp: one JSON-RPC message or a batch. */
  async post(input: McpPostInput): Promise<HttpReply> {
    return this.#post(input);
  }

  /** DELETE /mcp: the client ends the session. */
  async end(input: { principal: CallerPrincipal; protocolVersion: string | null }): Promise<HttpReply> {
    const meta = this.#authorized(input.principal);
    if (!("tokenId" in meta)) return meta;
    const badVersion = unsupportedVersion(input.protocolVersion);
    if (badVersion) return badVersion;
    this.#log.info("MCP session ended by the client");
    await this.#terminate();
    return { status: 204 };
  }

  /** Events from droid sessions this MCP session follows; `accepted: false` means "forget me". */
  async deliver(events: SessionEvent[]): Promise<{ accepted: boolean }> {
    const meta = this.#meta;
    if (!meta) return { accepted: false };
    for (const event of events) {
      // A job this session started: it heard the job's events directly.
      if ("job_id" in event && this.#store.isOwnJob(event.job_id)) continue;
      const needed = alwaysDelivered(event);
      const level: LoggingLevel = needed ? "notice" : "job_id" in event ? jobEventLevel(event) : "info";
      // Caller tool and approval requests wait for this caller: they go out whatever the log level.
      if (!needed && !passesLevel(level, meta.logLevel)) continue;
      this.#send(
        JSON.stringify({
          jsonrpc: "2.0",
          method: "notifications/message",
          params: { level, logger: loggerFor(event), data: event },
        }),
      );
      // An approval request is also put to the client's human; a decision closes that dialog.
      this.#elicitations.onEvent(event, meta);
    }
    return { accepted: true };
  }

  /** A job a call of this session started reports an event (see jobs/job-events.ts). */
  async jobEvent(event: JobEvent): Promise<{ accepted: boolean }> {
    const meta = this.#meta;
    if (!meta) return { accepted: false };
    this.#store.addOwnJob(event.job_id);
    if (!passesLevel(jobEventLevel(event), meta.logLevel)) return { accepted: true };
    const message = jobEventMessage(event);
    this.#stream?.event(message, this.#store.append(message));
    return { accepted: true };
  }

  /** This session now receives the events of droid session `sessionId` (a spawn run as a job). */
  async follow(sessionId: string): Promise<void> {
    if (this.#meta) this.#store.addSubscription(sessionId);
  }

  override async alarm(): Promise<void> {
    const meta = this.#meta;
    if (!meta) return;
    const idleFor = Date.now() - meta.lastActivity;
    if (this.#stream === null && idleFor >= IDLE_TTL_MS) {
      this.#log.info("MCP session expired after inactivity");
      await this.#terminate();
      return;
    }
    await this.ctx.storage.setAlarm(Math.max(Date.now(), meta.lastActivity) + IDLE_TTL_MS);
  }

  // ------------------------------------------------------------------ POST

  async #post(input: McpPostInput): Promise<HttpReply> {
    const { principal, sessionId } = input;
    if (!input.contentType.toLowerCase().includes("application/json")) {
      return rpcErrorReply(415, McpErrorCode.invalidRequest, "Content-Type must be application/json");
    }
    const body = parseJson(input.body);
    if (!body.ok && body.reason === "too_deep") {
      return rpcErrorReply(400, McpErrorCode.invalidRequest, `Invalid request: ${body.error}`);
    }
    if (!body.ok) return rpcErrorReply(400, McpErrorCode.parseError, `Parse error: ${body.error}`);
    const batch = Array.isArray(body.value);
    const raw: unknown[] = batch ? (body.value as unknown[]) : [body.value];
    if (raw.length === 0) return rpcErrorReply(400, McpErrorCode.invalidRequest, "empty batch");
    const messages: JSONRPCMessage[] = [];
    for (const item of raw) {
      const message = JSONRPCMessageSchema.safeParse(item);
      if (!message.success)
        return rpcErrorReply(400, McpErrorCode.invalidRequest, "Invalid JSON-RPC message");
      messages.push(message.data);
    }
    const init = messages.find((m) => isInitializeRequest(m));
    if (init && !input.fresh) {
      return rpcErrorReply(
        400,
        McpErrorCode.invalidRequest,
        "initialize must be sent without an Mcp-Session-Id",
      );
    }
    if (!init && input.fresh) {
      return rpcErrorReply(
        400,
        McpErrorCode.invalidRequest,
        "Bad Request: Mcp-Session-Id header is required",
      );
    }
    if (init) {
      if (messages.length > 1) {
        return rpcErrorReply(400, McpErrorCode.invalidRequest, "initialize must be sent on its own");
      }
      return this.#initialize(init as InitializeRequest & JSONRPCRequest, principal, sessionId);
    }
    const meta = this.#authorized(principal);
    if (!("tokenId" in meta)) return meta;
    const badVersion = unsupportedVersion(input.protocolVersion);
    if (badVersion) return badVersion;
    this.#touch(meta);
    for (const message of messages) this.#calls.noticeCancel(message);
    // Responses to what this server asked (elicitations): answered before any request runs.
    const answers = messages.filter(
      (m): m is JSONRPCResultResponse | JSONRPCErrorResponse =>
        isJSONRPCResultResponse(m) || isJSONRPCErrorResponse(m),
    );
    if (answers.length > 0) await this.#elicitations.onResponses(answers, principal, meta);
    const requests = messages.filter((m): m is JSONRPCRequest => isJSONRPCRequest(m));
    if (requests.length === 0) return { status: 202 };
    const reply = new PostReply(
      input.acceptsSse,
      () => this.#stream,
      (stream) => this.#answers.add(stream),
    );
    const responses = Promise.all(requests.map((r) => this.#answer(r, meta, principal, reply)));
    return reply.settle(responses, batch, { "mcp-session-id": meta.sessionId });
  }

  async #initialize(
    request: InitializeRequest & JSONRPCRequest,
    principal: CallerPrincipal,
    sessionId: string,
  ): Promise<HttpReply> {
    if (this.#meta) return rpcErrorReply(400, McpErrorCode.invalidRequest, "session is already initialized");
    const { meta, reply } = newMcpSession(request, principal, sessionId);
    this.#meta = meta;
    this.#store.setMeta("session", MCP_META, this.#meta);
    await this.ctx.storage.setAlarm(Date.now() + IDLE_TTL_MS);
    this.#log = createLog({ component: "mcp", mcp_session: sessionId });
    this.#log.info("MCP session initialized", {
      client: meta.clientName,
      protocol: meta.protocolVersion,
      token: principal.tokenId,
      elicitation: meta.canElicit,
    });
    return reply;
  }

  async #answer(
    request: JSONRPCRequest,
    meta: McpMeta,
    principal: CallerPrincipal,
    reply: PostReply,
  ): Promise<unknown> {
    const token = request.params?._meta?.progressToken;
    const signal = this.#calls.begin(request.id);
    try {
      const result = await handleMethod(request, {
        env: this.env,
        meta,
        principal,
        log: this.#log,
        origin: {
          via: { mcpSessionId: meta.sessionId, streaming: this.#stream !== null },
          remember: (sessionId) => this.#store.addSubscription(sessionId),
          progress: (update) => reply.progress(token, update),
          progressEveryMs: config(this.env).keepAliveMs,
        },
        setLogLevel: (level) => {
          meta.logLevel = level;
          this.#store.setMeta("session", MCP_META, meta);
        },
        waitUntil: (p) => this.ctx.waitUntil(p),
        signal,
      });
      return { jsonrpc: "2.0", id: request.id, result };
    } catch (err) {
      if (err instanceof RpcError)
        return { jsonrpc: "2.0", id: request.id, error: { code: err.code, message: err.message } };
      this.#log.error("MCP request failed", { method: clip(request.method), error: errorMessage(err) });
      return {
        jsonrpc: "2.0",
        id: request.id,
        error: { code: McpErrorCode.internalError, message: "Internal error" },
      };
    } finally {
      this.#calls.end(request.id, signal);
    }
  }

  // ------------------------------------------------------------------ GET (event stream)

  async #get(request: Request, principal: CallerPrincipal): Promise<Response> {
    const accept = request.headers.get("accept") ?? "";
    if (!accept.includes("text/event-stream") && !accept.includes("*/*")) {
      return rpcErrorResponse(406, McpErrorCode.invalidRequest, "Accept must include text/event-stream");
    }
    const meta = this.#authorized(principal);
    if (!("tokenId" in meta)) return toResponse(meta);
    const badVersion = unsupportedVersion(request.headers.get("mcp-protocol-version"));
    if (badVersion) return toResponse(badVersion);
    this.#touch(meta);
    const lastEventId = Number.parseInt(request.headers.get("last-event-id") ?? "", 10);
    // Nothing may be delivered between reading the missed messages and installing the stream.
    const stream = await this.ctx.blockConcurrencyWhile(async () => {
      const missed = Number.isInteger(lastEventId) ? await this.#store.after(lastEventId) : [];
      const previous = this.#stream;
      const next: SseStream = new SseStream(() => this.#streamDied(next));
      this.#stream = next;
      previous?.close();
      next.retry(1000);
      for (const m of missed) next.event(m.message, m.seq);
      if (missed.length === 0) next.prime(this.#store.lastSeq);
      return next;
    });
    stream.keepAlive(config(this.env).keepAliveMs);
    if (principal.issued) stream.watch(() => stillValid(this.env, principal), TOKEN_RECHECK_MS);
    this.#tellSessions("live");
    return new Response(stream.readable, { headers: { ...SSE_HEADERS, "mcp-session-id": meta.sessionId } });
  }

  #streamedAnswer(id: string, principal: CallerPrincipal): Response {
    const meta = this.#authorized(principal);
    if (!("tokenId" in meta)) return toResponse(meta);
    const stream = this.#answers.claim(id);
    if (!stream) return rpcErrorResponse(404, McpErrorCode.invalidRequest, "no such answer stream");
    return new Response(stream.readable, { headers: { ...SSE_HEADERS, "mcp-session-id": meta.sessionId } });
  }

  #streamDied(stream: SseStream): void {
    if (this.#stream !== stream) return;
    this.#stream = null;
    if (!this.#meta) return;
    this.#log.info("MCP event stream dropped");
    this.#tellSessions("dropped");
  }

  async #terminate(): Promise<void> {
    const meta = this.#meta;
    if (!meta) return;
    const sessions = this.#store.subscriptions();
    this.#meta = null;
    await this.#store.clear();
    this.#elicitations.reset();
    await this.ctx.storage.deleteAlarm();
    this.#stream?.close();
    this.#stream = null;
    await Promise.all(sessions.map((id) => this.#tell(meta.sessionId, id, "gone")));
  }

  // ------------------------------------------------------------------ helpers

  /** A message on the event stream, kept in the outbox so a client resuming with Last-Event-ID gets it. */
  #send(message: string): void {
    const seq = this.#store.append(message);
    this.#stream?.event(message, seq);
  }

  #authorized(principal: CallerPrincipal): McpMeta | HttpReply {
    const meta = this.#meta;
    // A session of another token is reported exactly like an unknown one.
    if (!meta || meta.tokenId !== principal.tokenId) {
      return rpcErrorReply(404, McpErrorCode.sessionNotFound, "Session not found");
    }
    return meta;
  }

  #touch(meta: McpMeta): void {
    const now = Date.now();
    // Persisted at most once a minute: it only decides idle expiry.
    if (now - meta.lastActivity > 60_000) {
      meta.lastActivity = now;
      this.#store.setMeta("session", MCP_META, meta);
    } else meta.lastActivity = now;
  }

  #tellSessions(change: PresenceChange): void {
    const meta = this.#meta;
    if (!meta) return;
    for (const id of this.#store.subscriptions()) void this.#tell(meta.sessionId, id, change);
  }

  async #tell(mcpSessionId: string, sessionId: string, change: PresenceChange): Promise<void> {
    try {
      await objects.session(this.env, sessionId).presenceChanged(mcpSessionId, change);
    } catch (err) {
      this.#log.warn("presence update failed", { session: sessionId, change, error: errorMessage(err) });
    }
  }
}
