import { randomUUID } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolOutcome, CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";
import { tryParseJson } from "../../../protocol/json.js";
import {
  type HostSessionEvent,
  type HostToSession,
  type SessionToHost,
  SessionToHostSchema,
  TUNNEL_PROTOCOL_VERSION,
} from "../../../protocol/tunnel.js";
import { ReconnectingSocket, type TunnelTiming } from "./reconnecting-socket.js";

export interface SessionTunnelOptions {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  sessionId: string;
  logger: Logger;
  onConfig(config: CallerToolsConfig): void;
  /** A message for the droid; return once it is written to the agent's stdin. */
  onDroidMessage(seq: number, text: string): void;
  /** The Worker no longer knows the session. */
  onGone(reason: string): void;
  timing?: TunnelTiming;
}

interface PendingCall {
  frame: Extract<HostToSession, { type: "caller_tool_call" }>;
  resolve(outcome: CallerToolOutcome): void;
}

/** Most host events buffered while the tunnel is down; older droid output is dropped past it. */
const MAX_BUFFERED_EVENTS = 10_000;
const MAX_BATCH = 256;

/**
 * One session's tunnel to its SessionDurableObject. Nothing in flight is lost across a
 * reconnect: caller tool calls stay pending and are re-sent (the object de-duplicates by
 * `call_id`), host events are re-sent until acknowledged (de-duplicated by `seq`), and droid
 * messages already delivered are acknowledged, not delivered twice.
 */
export class SessionTunnel {
  readonly #o: SessionTunnelOptions;
  readonly #socket: ReconnectingSocket;
  readonly #calls = new Map<string, PendingCall>();
  /** Event batches sent (or to send) and not yet acknowledged, in seq order. */
  readonly #unacked: { seq: number; events: HostSessionEvent[] }[] = [];
  #buffer: HostSessionEvent[] = [];
  #flushScheduled = false;
  #nextSeq = 1;
  #deliveredMessageSeq = 0;
  #ready = false;
  #ackWaiters: (() => void)[] = [];

  constructor(options: SessionTunnelOptions) {
    this.#o = options;
    const url = new URL(
      `/v1/tunnel/sessions/${encodeURIComponent(options.sessionId)}`,
      toWs(options.workerUrl),
    );
    this.#socket = new ReconnectingSocket({
      url: url.toString(),
      headers: () => ({ authorization: `Bearer ${options.hostToken}` }),
      logger: options.logger,
      timing: options.timing,
      onOpen: (socket) => {
        this.#ready = false;
        socket.send({
          type: "session_hello",
          v: TUNNEL_PROTOCOL_VERSION,
          host_id: options.hostId,
          delivered_message_seq: this.#deliveredMessageSeq,
        } satisfies HostToSession);
      },
      onFrame: (text) => this.#onFrame(text),
      onPermanentFailure: (status, body) =>
        options.onGone(`the Worker refused the session tunnel (${status}): ${body}`),
    });
  }

  start(): void {
    this.#socket.start();
  }

  get connected(): boolean {
    return this.#ready;
  }

  /** Relays one caller tool call; resolves with its outcome, however many reconnects it takes. */
  callerTool(tool: string, args: JsonObject): Promise<CallerToolOutcome> {
    return new Promise((resolve) => {
      const frame = { type: "caller_tool_call", call_id: randomUUID(), tool, arguments: args } as const;
      this.#calls.set(frame.call_id, { frame, resolve });
      if (this.#ready) this.#socket.send(frame);
    });
  }

  /** Fails every pending call (the session is over on this host). */
  failPending(outcome: CallerToolOutcome): void {
    for (const call of this.#calls.values()) call.resolve(outcome);
    this.#calls.clear();
  }

  /** Queues a host event; events go out in batches, in order, and are re-sent until acknowledged. */
  event(event: HostSessionEvent): void {
    this.#buffer.push(event);
    const buffered = this.#buffer.length + this.#unacked.reduce((n, b) => n + b.events.length, 0);
    if (buffered > MAX_BUFFERED_EVENTS) {
      const dropAt = this.#buffer.findIndex((e) => e.type === "droid_output" || e.type === "droid_log");
      if (dropAt >= 0) this.#buffer.splice(dropAt, 1);
    }
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(() => this.#flush());
    }
  }

  /** Resolves once every event queued so far is acknowledged, or after `timeoutMs`. */
  async drained(timeoutMs: number): Promise<boolean> {
    if (this.#buffer.length === 0 && this.#unacked.length === 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#ackWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  close(): void {
    this.#socket.close();
    this.#ready = false;
  }

  #flush(): void {
    this.#flushScheduled = false;
    while (this.#buffer.length > 0) {
      const events = this.#buffer.splice(0, MAX_BATCH);
      const batch = { seq: this.#nextSeq++, events };
      this.#unacked.push(batch);
      if (this.#ready) this.#socket.send({ type: "session_events", ...batch } satisfies HostToSession);
    }
  }

  #onFrame(text: string): void {
    const json = tryParseJson(text);
    const parsed = json.ok ? SessionToHostSchema.safeParse(json.value) : null;
    if (!parsed?.success) {
      this.#o.logger.warn({ frame: text.slice(0, 200) }, "bad frame from the session object");
      this.#socket.send({
        type: "error",
        error: { code: "bad_frame", message: "unparseable frame" },
      } satisfies HostToSession);
      return;
    }
    this.#handle(parsed.data);
  }

  #handle(frame: SessionToHost): void {
    switch (frame.type) {
      case "session_welcome":
        this.#ready = true;
        this.#acked(frame.stored_event_seq);
        // A restarted host-agent must not reuse seqs the object already stored.
        if (this.#unacked.length === 0 && this.#nextSeq <= frame.stored_event_seq)
          this.#nextSeq = frame.stored_event_seq + 1;
        for (const batch of this.#unacked)
          this.#socket.send({ type: "session_events", ...batch } satisfies HostToSession);
        for (const call of this.#calls.values()) this.#socket.send(call.frame);
        return;
      case "caller_tools_config":
        this.#o.onConfig(frame.config);
        return;
      case "caller_tool_result": {
        const call = this.#calls.get(frame.call_id);
        if (!call) return;
        this.#calls.delete(frame.call_id);
        call.resolve(frame.outcome);
        return;
      }
      case "droid_message":
        if (frame.seq > this.#deliveredMessageSeq) {
          this.#o.onDroidMessage(frame.seq, frame.text);
          this.#deliveredMessageSeq = frame.seq;
        }
        this.#socket.send({ type: "droid_message_ack", seq: frame.seq } satisfies HostToSession);
        return;
      case "session_events_ack":
        this.#acked(frame.seq);
        return;
      case "error":
        this.#o.logger.warn(
          { code: frame.error.code, message: frame.error.message },
          "session object reported an error",
        );
        if (frame.error.code === "session_not_found") this.#o.onGone(frame.error.message);
        return;
    }
  }

  #acked(seq: number): void {
    while (this.#unacked.length > 0 && (this.#unacked[0]?.seq ?? Infinity) <= seq) this.#unacked.shift();
    if (this.#unacked.length === 0 && this.#buffer.length === 0) {
      const waiters = this.#ackWaiters;
      this.#ackWaiters = [];
      for (const w of waiters) w();
    }
  }
}

/** The WebSocket URL of the Worker (http→ws, https→wss). */
export function toWs(workerUrl: string): string {
  const u = new URL(workerUrl);
  u.protocol = u.protocol === "https:" ? "wss:" : u.protocol === "http:" ? "ws:" : u.protocol;
  return u.toString();
}
