import { z } from "zod";
import type { SessionEvent } from "../../../protocol/events.js";
import { exceedsUtf8Bytes, parseJson } from "../../../protocol/json.js";
import { Limits } from "../../../protocol/limits.js";
import { SubscriberFrameSchema, type SubscriberReply } from "../../../protocol/subscriber.js";
import { can, project } from "../auth/access.js";
import { principalOf } from "../auth/principal-header.js";
import { type CallerPrincipal, CallerPrincipalSchema } from "../auth/tokens.js";
import { AppError } from "../errors.js";
import { readAttachment } from "../objects/socket-attachment.js";
import { SSE_HEADERS, SseStream } from "../streams/sse.js";
import type { SessionRecord } from "./session-record.js";
import type { RespondInput } from "./types.js";

/** What the plain subscribers need from the rest of the session. */
export interface SubscriberDeps {
  state: DurableObjectState;
  record(): SessionRecord;
  eventsSince(since: number, limit: number): string[];
  keepAliveMs: number;
  /** The owner opened a plain subscription / closed its last one. */
  ownerOpened(): void;
  ownerClosed(): void;
  respond(input: RespondInput): unknown;
  /** Whether a subscriber's token still works (revoked and expired tokens are cut off). */
  stillValid(principal: CallerPrincipal): Promise<boolean>;
}

/** How often open subscriptions of issued (revocable) tokens re-check them. */
export const TOKEN_RECHECK_MS = 2_000;

const SubAttachmentSchema = z.object({
  role: z.literal("sub"),
  principal: CallerPrincipalSchema,
  owner: z.boolean(),
});
type SubAttachment = z.infer<typeof SubAttachmentSchema>;

const BACKLOG_LIMIT = 10_000;

function attachment(ws: WebSocket): SubAttachment | null {
  return readAttachment(ws, SubAttachmentSchema);
}

/**
 * Plain event subscribers for callers that are not MCP clients: `GET /v1/sessions/:id/events`
 * (SSE, resumable with Last-Event-ID = event index) and `GET /v1/sessions/:id/ws` (hibernatable
 * WebSocket that may also carry `caller_tool_response`). Same auth and event shapes as MCP.
 */
export class SubscriberSockets {
  readonly #d: SubscriberDeps;
  readonly #sse = new Map<SseStream, { owner: boolean }>();
  #tokenTimer: ReturnType<typeof setInterval> | undefined;

  constructor(deps: SubscriberDeps) {
    this.#d = deps;
  }

  acceptWebSocket(request: Request, url: URL): Response {
    const principal = this.#reader(request);
    if (principal instanceof Response) return principal;
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    const owner = principal.tokenId === this.#d.record().ownerTokenId;
    const { 0: client, 1: server } = new WebSocketPair();
    this.#d.state.acceptWebSocket(server, ["sub"]);
    server.serializeAttachment({ role: "sub", principal, owner } satisfies SubAttachment);
    for (const body of this.#d.eventsSince(sinceIndex(url, null), BACKLOG_LIMIT)) server.send(body);
    if (owner) this.#d.ownerOpened();
    if (principal.issued) this.watchTokens();
    return new Response(null, { status: 101, webSocket: client });
  }

  openSse(request: Request, url: URL): Response {
    const principal = this.#reader(request);
    if (principal instanceof Response) return principal;
    const owner = principal.tokenId === this.#d.record().ownerTokenId;
    const stream: SseStream = new SseStream(() => {
      this.#sse.delete(stream);
      if (owner) this.#d.ownerClosed();
    });
    stream.retry(1000);
    for (const body of this.#d.eventsSince(
      sinceIndex(url, request.headers.get("last-event-id")),
      BACKLOG_LIMIT,
    )) {
      stream.event(body, (JSON.parse(body) as SessionEvent).index);
    }
    stream.keepAlive(this.#d.keepAliveMs);
    if (principal.issued) stream.watch(() => this.#d.stillValid(principal), TOKEN_RECHECK_MS);
    this.#sse.set(stream, { owner });
    if (owner) this.#d.ownerOpened();
    return new Response(stream.readable, { headers: SSE_HEADERS });
  }

  broadcast(json: string, index: number): void {
    for (const ws of this.#d.state.getWebSockets("sub")) {
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
    return this.#d.state
      .getWebSockets("sub")
      .some((ws) => ws.readyState === WebSocket.OPEN && attachment(ws)?.owner === true);
  }

  onMessage(ws: WebSocket, raw: string | ArrayBuffer): void {
    const state = attachment(ws);
    if (!state) return;
    const reply = (r: SubscriberReply) => {
      try {
        ws.send(JSON.stringify(r));
      } catch {
        // the subscriber is gone
      }
    };
    if (typeof raw !== "string" || exceedsUtf8Bytes(raw, Limits.frameBytes)) {
      reply({
        type: "frame_error",
        error: { code: "too_large", message: `frames are JSON text of at most ${Limits.frameBytes} bytes` },
      });
      return;
    }
    const json = parseJson(raw);
    if (!json.ok) {
      reply({ type: "frame_error", error: { code: "bad_frame", message: `invalid JSON: ${json.error}` } });
      return;
    }
    const parsed = SubscriberFrameSchema.safeParse(json.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      reply({
        type: "frame_error",
        error: { code: "bad_frame", message: `${issue?.path.join(".")} ${issue?.message}` },
      });
      return;
    }
    const frame = parsed.data;
    try {
      this.#d.respond({
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

  /**
   * While WebSocket subscribers with revocable tokens are open, re-checks their tokens every few
   * seconds and closes the ones that stopped working. (Started again after a hibernation by the
   * next event that wakes the object.)
   */
  watchTokens(): void {
    if (this.#tokenTimer !== undefined) return;
    this.#tokenTimer = setInterval(() => void this.#recheck(), TOKEN_RECHECK_MS);
  }

  async #recheck(): Promise<void> {
    const issued = this.#d.state.getWebSockets("sub").filter((ws) => attachment(ws)?.principal.issued);
    if (issued.length === 0) {
      if (this.#tokenTimer !== undefined) clearInterval(this.#tokenTimer);
      this.#tokenTimer = undefined;
      return;
    }
    for (const ws of issued) {
      const principal = attachment(ws)?.principal;
      if (!principal) continue;
      const valid = await this.#d.stillValid(principal).catch(() => true);
      if (valid) continue;
      try {
        ws.close(4001, "token revoked or expired");
      } catch {
        // already closing
      }
    }
  }

  onClose(ws: WebSocket): void {
    if (attachment(ws)?.owner) this.#d.ownerClosed();
  }

  closeAll(code: number, reason: string): void {
    for (const ws of this.#d.state.getWebSockets("sub")) {
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
    const record = this.#d.record();
    if (!can(principal, "read", project(record.projectId))) {
      return Response.json(
        {
          error: {
            code: "forbidden",
            message: `token ${principal.tokenId} may not read session ${record.sessionId} (project ${record.projectId})`,
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
