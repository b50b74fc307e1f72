import type { SessionEvent } from "../../../protocol/events.js";
import { tryParseJson } from "../../../protocol/json.js";
import { SubscriberFrameSchema, type SubscriberReply } from "../../../protocol/subscriber.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { AppError } from "../errors.js";
import { exceedsUtf8Bytes } from "../frame-size.js";
import { principalOf } from "../http/principal-header.js";
import { SSE_HEADERS, SseStream } from "../http/sse.js";
import type { SessionDurableObject } from "./session-do.js";

interface SubAttachment {
  role: "sub";
  principal: CallerPrincipal;
  owner: boolean;
}

const MAX_FRAME_BYTES = 1024 * 1024;
const BACKLOG_LIMIT = 10_000;

function attachment(ws: WebSocket): SubAttachment | null {
  const a = ws.deserializeAttachment() as { role?: string } | null;
  return a?.role === "sub" ? (a as SubAttachment) : null;
}

/**
 * Plain event subscribers for callers that are not MCP clients: `GET /v1/sessions/:id/events`
 * (SSE, resumable with Last-Event-ID = event index) and `GET /v1/sessions/:id/ws` (hibernatable
 * WebSocket that may also carry `caller_tool_response`). Same auth and event shapes as MCP.
 */
export class SubscriberSockets {
  readonly #s: SessionDurableObject;
  readonly #sse = new Map<SseStream, { owner: boolean }>();

  constructor(session: SessionDurableObject) {
    this.#s = session;
  }

  acceptWebSocket(request: Request, url: URL): Response {
    const principal = this.#reader(request);
    if (principal instanceof Response) return principal;
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    const owner = principal.tokenId === this.#s.record.ownerTokenId;
    const { 0: client, 1: server } = new WebSocketPair();
    this.#s.state.acceptWebSocket(server, ["sub"]);
    server.serializeAttachment({ role: "sub", principal, owner } satisfies SubAttachment);
    for (const body of this.#s.store.eventsSince(sinceIndex(url, null), BACKLOG_LIMIT)) server.send(body);
    if (owner) this.#s.presence.plainOpened();
    return new Response(null, { status: 101, webSocket: client });
  }

  openSse(request: Request, url: URL): Response {
    const principal = this.#reader(request);
    if (principal instanceof Response) return principal;
    const owner = principal.tokenId === this.#s.record.ownerTokenId;
    const stream: SseStream = new SseStream(() => {
      this.#sse.delete(stream);
      if (owner) this.#s.presence.plainClosed();
    });
    stream.retry(1000);
    for (const body of this.#s.store.eventsSince(
      sinceIndex(url, request.headers.get("last-event-id")),
      BACKLOG_LIMIT,
    )) {
      stream.event(body, (JSON.parse(body) as SessionEvent).index);
    }
    stream.keepAlive(this.#s.config.keepAliveMs);
    this.#sse.set(stream, { owner });
    if (owner) this.#s.presence.plainOpened();
    return new Response(stream.readable, { headers: SSE_HEADERS });
  }

  broadcast(json: string, index: number): void {
    for (const ws of this.#s.state.getWebSockets("sub")) {
      try {
        ws.send(json);
      } catch {
        // closed; webSocketClose cleans up
      }
    }
    for (const stream of this.#sse.keys()) stream.event(json, index);
  }

  ownerConnected(): boolean {
    for (const [stream, { owner }] of this.#sse) if (owner && !stream.dead) return true;
    return this.#s.state
      .getWebSockets("sub")
      .some((ws) => ws.readyState === WebSocket.OPEN && attachment(ws)?.owner === true);
  }

  onMessage(ws: WebSocket, raw: string | ArrayBuffer): void {
    const state = attachment(ws);
    if (!state) return;
    const reply = (r: SubscriberReply) => ws.send(JSON.stringify(r));
    if (typeof raw !== "string" || exceedsUtf8Bytes(raw, MAX_FRAME_BYTES)) {
      reply({
        type: "error",
        error: { code: "bad_frame", message: "frames are JSON text up to 1 MiB" },
      });
      return;
    }
    const json = tryParseJson(raw);
    if (!json.ok) {
      reply({ type: "error", error: { code: "bad_frame", message: `invalid JSON: ${json.error}` } });
      return;
    }
    const parsed = SubscriberFrameSchema.safeParse(json.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      reply({
        type: "error",
        error: { code: "bad_frame", message: `${issue?.path.join(".")} ${issue?.message}` },
      });
      return;
    }
    const frame = parsed.data;
    try {
      this.#s.requests.respond({
        principal: state.principal,
        requestId: frame.request_id,
        result: frame.result,
        error: frame.error,
        via: null,
      });
      reply({ type: "caller_tool_response_result", request_id: frame.request_id, ok: true });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      reply({
        type: "caller_tool_response_result",
        request_id: frame.request_id,
        ok: false,
        error: { code: err.code, message: err.message },
      });
    }
  }

  onClose(ws: WebSocket): void {
    if (attachment(ws)?.owner) this.#s.presence.plainClosed();
  }

  closeAll(code: number, reason: string): void {
    for (const ws of this.#s.state.getWebSockets("sub")) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
    for (const stream of [...this.#sse.keys()]) stream.close();
  }

  #reader(request: Request): CallerPrincipal | Response {
    const principal = principalOf(request);
    if (principal?.kind !== "caller") return new Response("caller token required", { status: 403 });
    const record = this.#s.record;
    const admin = principal.scopes.some((s) => s === "admin" || s === "admin:ro");
    if (principal.tokenId !== record.ownerTokenId && !admin) {
      return Response.json(
        {
          error: {
            code: "not_owner",
            message: `only the owner of session ${record.sessionId} may subscribe`,
          },
        },
        { status: 403 },
      );
    }
    return principal;
  }
}

/** Where a subscription starts: after Last-Event-ID, else `since_index`, else the beginning. */
function sinceIndex(url: URL, lastEventId: string | null): number {
  const last = lastEventId === null ? Number.NaN : Number.parseInt(lastEventId, 10);
  if (Number.isInteger(last) && last >= 0) return last + 1;
  const since = Number.parseInt(url.searchParams.get("since_index") ?? "0", 10);
  return Number.isInteger(since) && since >= 0 ? since : 0;
}
