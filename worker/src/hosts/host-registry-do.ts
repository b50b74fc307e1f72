import { DurableObject } from "cloudflare:workers";
import { tryParseJson } from "../../../protocol/json.js";
import {
  type HostToRegistry,
  HostToRegistrySchema,
  MAX_TUNNEL_FRAME_BYTES,
  type RegistryToHost,
  type RuntimeKind,
  type SessionSpec,
  TUNNEL_PROTOCOL_VERSION,
  type TunnelError,
} from "../../../protocol/tunnel.js";
import { config, type Env } from "../env.js";
import { fail, ok, type Result } from "../errors.js";
import { exceedsUtf8Bytes } from "../frame-size.js";
import { principalOf } from "../http/principal-header.js";
import { createLog } from "../log.js";

interface HostAttachment {
  hostId: string;
  runtime: RuntimeKind | null;
  maxSessions: number;
  ready: boolean;
}

interface PendingAck {
  resolve(result: Result<void>): void;
  timer: ReturnType<typeof setTimeout>;
}

const SCHEMA = "CREATE TABLE IF NOT EXISTS placements (session_id TEXT PRIMARY KEY, host_id TEXT NOT NULL)";

/**
 * The one registry of connected host-agents (the host channel of the tunnel): which hosts are
 * up, which host runs which session, and the session_start/session_stop requests to them. Only
 * lifecycle traffic goes through here; caller tool traffic uses per-session tunnels.
 */
export class HostRegistryDurableObject extends DurableObject<Env> {
  readonly #log = createLog({ component: "host-registry" });
  readonly #pending = new Map<string, PendingAck>();
  /** Spawns waiting for a host to (re)connect. */
  readonly #hostWaiters = new Set<() => void>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(SCHEMA);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  override async fetch(request: Request): Promise<Response> {
    const principal = principalOf(request);
    if (principal?.kind !== "host") return new Response("host token required", { status: 403 });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    const hostId = new URL(request.url).searchParams.get("host_id") ?? "";
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(hostId)) return new Response("host_id is required", { status: 400 });
    for (const old of this.ctx.getWebSockets(hostTag(hostId)))
      old.close(4000, "replaced by a newer connection");
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [hostTag(hostId)]);
    server.serializeAttachment({
      hostId,
      runtime: null,
      maxSessions: 0,
      ready: false,
    } satisfies HostAttachment);
    this.#log.info("host connected", { host: hostId });
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Places a session on the least loaded connected host and waits for it to start the droid. */
  async startSession(input: {
    sessionId: string;
    spec: SessionSpec;
  }): Promise<Result<{ hostId: string; runtime: RuntimeKind }>> {
    const host = await this.#waitForHost(config(this.env).hostWaitMs);
    if (!host) {
      return fail("no_host", "no host-agent is connected to this Worker; start one (see README: host-agent)");
    }
    const sent = await this.#request(host.ws, (reqId) => ({
      type: "session_start",
      req_id: reqId,
      session_id: input.sessionId,
      spec: input.spec,
    }));
    if (!sent.ok) return sent;
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO placements (session_id, host_id) VALUES (?, ?)",
      input.sessionId,
      host.attachment.hostId,
    );
    return ok({ hostId: host.attachment.hostId, runtime: host.attachment.runtime ?? "process" });
  }

  /** Asks the session's host to stop its droid and remove the container. */
  async stopSession(input: { sessionId: string; reason: string }): Promise<Result<void>> {
    const row = this.ctx.storage.sql
      .exec("SELECT host_id FROM placements WHERE session_id = ?", input.sessionId)
      .toArray()[0];
    if (!row) return fail("not_found", `session ${input.sessionId} is not placed on any host`);
    this.ctx.storage.sql.exec("DELETE FROM placements WHERE session_id = ?", input.sessionId);
    const ws = this.ctx.getWebSockets(hostTag(String(row.host_id)))[0];
    if (!ws) return fail("no_host", `host ${String(row.host_id)} is not connected`);
    return this.#request(ws, (reqId) => ({
      type: "session_stop",
      req_id: reqId,
      session_id: input.sessionId,
      reason: input.reason,
    }));
  }

  override async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    if (typeof raw !== "string" || exceedsUtf8Bytes(raw, MAX_TUNNEL_FRAME_BYTES)) {
      return this.#sendError(ws, { code: "bad_frame", message: "frames are JSON text up to 1 MiB" });
    }
    const json = tryParseJson(raw);
    if (!json.ok) return this.#sendError(ws, { code: "bad_frame", message: `invalid JSON: ${json.error}` });
    const parsed = HostToRegistrySchema.safeParse(json.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return this.#sendError(ws, {
        code: "bad_frame",
        message: `invalid frame: ${issue?.path.join(".")} ${issue?.message}`,
      });
    }
    this.#handle(ws, parsed.data);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    const a = ws.deserializeAttachment() as HostAttachment | null;
    this.#log.info("host disconnected", { host: a?.hostId, code });
  }

  #handle(ws: WebSocket, frame: HostToRegistry): void {
    switch (frame.type) {
      case "host_hello": {
        if (frame.v !== TUNNEL_PROTOCOL_VERSION) {
          this.#sendError(ws, {
            code: "unsupported_version",
            message: `tunnel protocol ${frame.v} is not ${TUNNEL_PROTOCOL_VERSION}`,
          });
          ws.close(4002, "unsupported version");
          return;
        }
        const a = ws.deserializeAttachment() as HostAttachment;
        ws.serializeAttachment({
          ...a,
          runtime: frame.runtime,
          maxSessions: frame.max_sessions,
          ready: true,
        } satisfies HostAttachment);
        this.#send(ws, { type: "host_welcome", v: TUNNEL_PROTOCOL_VERSION, host_id: a.hostId });
        for (const wake of [...this.#hostWaiters]) wake();
        this.#log.info("host ready", {
          host: a.hostId,
          runtime: frame.runtime,
          sessions: frame.sessions.length,
        });
        return;
      }
      case "ack": {
        const pending = this.#pending.get(frame.req_id);
        if (!pending) return;
        this.#pending.delete(frame.req_id);
        clearTimeout(pending.timer);
        pending.resolve(
          frame.ok ? ok(undefined) : fail("host_error", frame.error?.message ?? "the host refused"),
        );
        return;
      }
      case "error":
        this.#log.warn("host reported an error", { code: frame.error.code, message: frame.error.message });
        return;
    }
  }

  /** A host with room, waiting up to `timeoutMs` for one to connect (tunnels reconnect after blips). */
  async #waitForHost(timeoutMs: number): Promise<{ ws: WebSocket; attachment: HostAttachment } | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const host = this.#pickHost();
      if (host || Date.now() >= deadline) return host;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#hostWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, deadline - Date.now());
        this.#hostWaiters.add(wake);
      });
    }
  }

  #pickHost(): { ws: WebSocket; attachment: HostAttachment } | null {
    const load = new Map<string, number>();
    for (const row of this.ctx.storage.sql.exec(
      "SELECT host_id, COUNT(*) AS n FROM placements GROUP BY host_id",
    )) {
      load.set(String(row.host_id), Number(row.n));
    }
    let best: { ws: WebSocket; attachment: HostAttachment; load: number } | null = null;
    for (const ws of this.ctx.getWebSockets()) {
      const a = ws.deserializeAttachment() as HostAttachment | null;
      if (!a?.ready || ws.readyState !== WebSocket.OPEN) continue;
      const n = load.get(a.hostId) ?? 0;
      if (n >= a.maxSessions) continue;
      if (!best || n < best.load) best = { ws, attachment: a, load: n };
    }
    return best;
  }

  #request(ws: WebSocket, build: (reqId: string) => RegistryToHost): Promise<Result<void>> {
    const reqId = crypto.randomUUID();
    const timeoutMs = config(this.env).hostAckTimeoutMs;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(reqId);
        resolve(fail("host_error", `the host did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(reqId, { resolve, timer });
      this.#send(ws, build(reqId));
    });
  }

  #send(ws: WebSocket, frame: RegistryToHost): void {
    try {
      ws.send(JSON.stringify(frame));
    } catch (err) {
      this.#log.warn("send to host failed", { error: String(err) });
    }
  }

  #sendError(ws: WebSocket, error: TunnelError): void {
    this.#log.warn("bad host frame", { ...error });
    this.#send(ws, { type: "error", error });
  }
}

function hostTag(hostId: string): string {
  return `host:${hostId}`;
}
