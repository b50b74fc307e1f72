import type { IncomingMessage } from "node:http";
import WebSocket from "ws";
import { ReconnectBackoff } from "../../../lib/backoff.js";
import type { Logger } from "../../../lib/log.js";
import { exceedsUtf8Bytes } from "../../../protocol/json.js";
import { Limits } from "../../../protocol/limits.js";
import { HEARTBEAT_PING, HEARTBEAT_PONG } from "../../../protocol/tunnel.js";

/** How a tunnel connection keeps itself alive. */
export interface TunnelTiming {
  /** Heartbeat period; a peer silent for 2.5 periods counts as gone. */
  heartbeatMs: number;
  /** Cap of the reconnect backoff. */
  maxReconnectDelayMs: number;
}

export const DEFAULT_TUNNEL_TIMING: TunnelTiming = { heartbeatMs: 15_000, maxReconnectDelayMs: 30_000 };

export interface ReconnectingSocketOptions {
  /** ws:// or wss:// URL. */
  url: string;
  /** Headers for each attempt (fresh credentials per attempt). */
  headers: () => Record<string, string>;
  logger: Logger;
  /** Runs on every (re)connection; the owner starts a new conversation here. */
  onOpen(): void;
  /** Every text frame except heartbeats. */
  onFrame(text: string): void;
  /** The current connection is gone (the owner ends its conversation). */
  onClose(): void;
  /** The server refused us for good (400/401/403/404/410): no more attempts. */
  onPermanentFailure(status: number, body: string): void;
  timing?: TunnelTiming;
  backoff?: ReconnectBackoff;
}

/** HTTP statuses on upgrade that will not get better by retrying. */
const PERMANENT = new Set([400, 401, 403, 404, 410]);

/**
 * An outbound WebSocket that stays connected: capped exponential backoff with full jitter
 * between attempts (reset only after a stable period), text heartbeats the Durable Object
 * answers without waking ("ping"/"pong"), and a dead-peer check. It does not queue frames: its
 * owners keep their own state (pending calls, unacked events) and re-send it on `onOpen`.
 */
export class ReconnectingSocket {
  readonly #options: ReconnectingSocketOptions;
  readonly #backoff: ReconnectBackoff;
  readonly #heartbeatMs: number;
  #ws: WebSocket | null = null;
  #closed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #lastSeen = 0;
  #openedAt = 0;
  #connected = false;

  constructor(options: ReconnectingSocketOptions) {
    this.#options = options;
    const timing = options.timing ?? DEFAULT_TUNNEL_TIMING;
    this.#backoff = options.backoff ?? new ReconnectBackoff({ maxDelayMs: timing.maxReconnectDelayMs });
    this.#heartbeatMs = timing.heartbeatMs;
  }

  get connected(): boolean {
    return this.#connected;
  }

  start(): void {
    this.#connect();
  }

  /**
   * Connects now if we are waiting to retry (the host channel came back: the network is there
   * again, so the session tunnels need not sit out their own backoff).
   */
  retryNow(): void {
    if (this.#closed || this.#ws !== null || this.#retryTimer === undefined) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#backoff.reset();
    this.#connect();
  }

  /**
   * Sends one frame if connected; false otherwise (the owner re-sends on the next open). A frame
   * over the frame limit is never sent: it would only make the server drop the connection.
   */
  send(text: string): boolean {
    const ws = this.#ws;
    if (!this.#connected || !ws) return false;
    if (exceedsUtf8Bytes(text, Limits.frameBytes)) {
      this.#options.logger.error({ bytes: text.length }, "refusing to send a frame over the frame limit");
      return false;
    }
    ws.send(text);
    return true;
  }

  /** Drops the current connection (it will reconnect): for a peer that stopped making sense. */
  drop(): void {
    this.#ws?.terminate();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    clearInterval(this.#heartbeat);
    const ws = this.#ws;
    this.#ws = null;
    if (this.#connected) {
      this.#connected = false;
      this.#options.onClose();
    }
    ws?.close(1000, "closing");
  }

  #connect(): void {
    if (this.#closed) return;
    this.#retryTimer = undefined;
    const log = this.#options.logger;
    const ws = new WebSocket(this.#options.url, {
      headers: this.#options.headers(),
      maxPayload: Limits.frameBytes,
      handshakeTimeout: 10_000,
      // Uncompressed: the tunnel carries many small messages, and compression costs each one a
      // trip through zlib on both ends, and each connection its zlib state (with 50 sessions the
      // host-agent's memory was ~10 MiB higher with it).
      perMessageDeflate: false,
    });
    this.#ws = ws;
    ws.on("open", () => {
      if (this.#ws !== ws) return;
      this.#connected = true;
      this.#openedAt = Date.now();
      this.#lastSeen = Date.now();
      this.#startHeartbeat(ws);
      log.info({ url: redact(this.#options.url) }, "tunnel connected");
      this.#options.onOpen();
    });
    ws.on("message", (data, isBinary) => {
      if (this.#ws !== ws) return;
      this.#lastSeen = Date.now();
      if (isBinary) return;
      const text = data.toString();
      if (text === HEARTBEAT_PONG) return;
      this.#options.onFrame(text);
    });
    ws.on("unexpected-response", (_req, res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      let body = "";
      res.on("data", (chunk: Buffer) => {
        if (body.length < 2000) body += chunk.toString();
      });
      res.on("end", () => {
        if (PERMANENT.has(status)) {
          this.#closed = true;
          log.error({ status, body: body.slice(0, 500) }, "tunnel refused for good");
          this.#options.onPermanentFailure(status, body);
        } else {
          log.warn({ status }, "tunnel upgrade failed; will retry");
        }
        ws.terminate();
      });
    });
    ws.on("error", (err) => log.warn({ err: err.message }, "tunnel error"));
    ws.on("close", (code) => {
      if (this.#ws !== ws && this.#ws !== null) return;
      clearInterval(this.#heartbeat);
      const wasConnected = this.#connected;
      this.#connected = false;
      this.#ws = null;
      if (wasConnected) this.#options.onClose();
      if (this.#closed) return;
      if (wasConnected) this.#backoff.connectionEnded(Date.now() - this.#openedAt);
      const delay = this.#backoff.next();
      log.info({ code, retry_in_ms: delay, attempt: this.#backoff.attempt }, "tunnel closed; reconnecting");
      this.#retryTimer = setTimeout(() => this.#connect(), delay);
    });
  }

  #startHeartbeat(ws: WebSocket): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => {
      if (Date.now() - this.#lastSeen > this.#heartbeatMs * 2.5) {
        this.#options.logger.warn("tunnel peer silent; reconnecting");
        ws.terminate();
        return;
      }
      ws.send(HEARTBEAT_PING);
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
  }
}

/** The WebSocket URL of the Worker (http→ws, https→wss). */
export function toWs(workerUrl: string): string {
  const u = new URL(workerUrl);
  u.protocol = u.protocol === "https:" ? "wss:" : u.protocol === "http:" ? "ws:" : u.protocol;
  return u.toString();
}

function redact(url: string): string {
  const u = new URL(url);
  u.search = "";
  return u.toString();
}
