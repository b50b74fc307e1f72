import { tryParseJson } from "../../../protocol/json.js";
import {
  type HostSessionEvent,
  type HostToSession,
  HostToSessionSchema,
  MAX_TUNNEL_FRAME_BYTES,
  type SessionToHost,
  TUNNEL_PROTOCOL_VERSION,
  type TunnelErrorCode,
} from "../../../protocol/tunnel.js";
import { exceedsUtf8Bytes } from "../frame-size.js";
import { principalOf } from "../http/principal-header.js";
import { errorMessage } from "../log.js";
import type { SessionDurableObject } from "./session-do.js";

interface HostAttachment {
  role: "host";
  hostId: string | null;
  /** Frames flow only after the host's hello, so the welcome is always first. */
  ready: boolean;
}

function attachment(ws: WebSocket): HostAttachment | null {
  const a = ws.deserializeAttachment() as { role?: string } | null;
  return a?.role === "host" ? (a as HostAttachment) : null;
}

/**
 * The host-agent's session tunnel: a hibernatable WebSocket the host opens to this object.
 * Only one is current; a newer one replaces the older. Frames are parsed with the shared schema;
 * a bad frame gets an `error` frame back and the tunnel stays up.
 */
export class HostChannel {
  readonly #s: SessionDurableObject;

  constructor(session: SessionDurableObject) {
    this.#s = session;
  }

  static owns(ws: WebSocket): boolean {
    return attachment(ws) !== null;
  }

  accept(request: Request): Response {
    const principal = principalOf(request);
    if (principal?.kind !== "host") return new Response("host token required", { status: 403 });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    this.close(4000, "replaced by a newer tunnel");
    const { 0: client, 1: server } = new WebSocketPair();
    this.#s.state.acceptWebSocket(server, ["host"]);
    server.serializeAttachment({ role: "host", hostId: null, ready: false } satisfies HostAttachment);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Sends a frame to the current tunnel; without one it is re-sent after the host reconnects. */
  send(frame: SessionToHost): void {
    const text = JSON.stringify(frame);
    for (const ws of this.#s.state.getWebSockets("host")) {
      if (!attachment(ws)?.ready) continue;
      try {
        ws.send(text);
      } catch (err) {
        this.#s.log.warn("tunnel send failed", { error: errorMessage(err) });
      }
    }
  }

  close(code: number, reason: string): void {
    for (const ws of this.#s.state.getWebSockets("host")) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
  }

  onMessage(ws: WebSocket, raw: string | ArrayBuffer): void {
    if (typeof raw !== "string") {
      this.#error(ws, "bad_frame", "tunnel frames are JSON text");
      return;
    }
    if (exceedsUtf8Bytes(raw, MAX_TUNNEL_FRAME_BYTES)) {
      this.#error(ws, "bad_frame", "frame too large");
      return;
    }
    const json = tryParseJson(raw);
    if (!json.ok) {
      this.#error(ws, "bad_frame", `invalid JSON: ${json.error}`);
      return;
    }
    const parsed = HostToSessionSchema.safeParse(json.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      this.#error(ws, "bad_frame", `invalid frame: ${issue?.path.join(".")} ${issue?.message}`);
      return;
    }
    const frame = parsed.data;
    const state = attachment(ws);
    if (frame.type !== "session_hello" && !state?.ready) {
      this.#error(ws, "bad_frame", "send session_hello first");
      return;
    }
    this.#handle(ws, frame);
  }

  onClose(ws: WebSocket, code: number): void {
    this.#s.log.info("host tunnel closed", { host: attachment(ws)?.hostId, code });
  }

  #handle(ws: WebSocket, frame: HostToSession): void {
    const s = this.#s;
    switch (frame.type) {
      case "session_hello": {
        if (frame.v !== TUNNEL_PROTOCOL_VERSION) {
          this.#error(
            ws,
            "unsupported_version",
            `tunnel protocol ${frame.v} is not ${TUNNEL_PROTOCOL_VERSION}`,
          );
          ws.close(4002, "unsupported version");
          return;
        }
        ws.serializeAttachment({ role: "host", hostId: frame.host_id, ready: true } satisfies HostAttachment);
        ws.send(JSON.stringify(s.welcomeFrame()));
        ws.send(
          JSON.stringify({ type: "caller_tools_config", config: s.callerConfig() } satisfies SessionToHost),
        );
        for (const m of s.store.messagesAfter(frame.delivered_message_seq)) {
          ws.send(
            JSON.stringify({ type: "droid_message", seq: m.seq, text: m.text } satisfies SessionToHost),
          );
        }
        return;
      }
      case "caller_tool_call":
        s.requests.onCall(frame);
        return;
      case "droid_message_ack":
        s.store.ackMessages(frame.seq);
        return;
      case "session_events":
        if (frame.seq > s.record.storedHostEventSeq) {
          for (const event of frame.events) this.#hostEvent(event);
          s.record.storedHostEventSeq = frame.seq;
          s.save();
        }
        ws.send(JSON.stringify({ type: "session_events_ack", seq: frame.seq } satisfies SessionToHost));
        return;
      case "error":
        s.log.warn("host reported an error", {
          code: frame.error.code,
          message: frame.error.message,
          ref: frame.ref,
        });
        return;
    }
  }

  #hostEvent(event: HostSessionEvent): void {
    const s = this.#s;
    s.emit(event);
    if (event.type !== "droid_status") return;
    if (event.status === "running" && s.record.status === "starting") {
      s.record.status = "running";
      s.save();
    } else if (event.status === "exited") {
      void s.finish("exited", `the droid exited with code ${event.exit_code ?? "unknown"}`);
    } else if (event.status === "failed") {
      void s.finish("failed", event.message ?? "the droid failed");
    }
  }

  #error(ws: WebSocket, code: TunnelErrorCode, message: string): void {
    this.#s.log.warn("bad tunnel frame", { code, message });
    try {
      ws.send(JSON.stringify({ type: "error", error: { code, message } } satisfies SessionToHost));
    } catch {
      // the socket is gone
    }
  }
}
