import type { Logger } from "../../../lib/log.js";
import { tryParseJson } from "../../../protocol/json.js";
import {
  type HostToRegistry,
  type RegistryToHost,
  RegistryToHostSchema,
  type RuntimeKind,
  type SessionSpec,
  TUNNEL_PROTOCOL_VERSION,
  type TunnelError,
} from "../../../protocol/tunnel.js";
import { ReconnectingSocket, type TunnelTiming } from "./reconnecting-socket.js";
import { toWs } from "./session-tunnel.js";

/** What the host control channel asks of the host's sessions. */
export interface SessionControl {
  start(sessionId: string, spec: SessionSpec): Promise<void>;
  stop(sessionId: string, reason: string): Promise<void>;
  running(): string[];
}

export interface HostControlOptions {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: RuntimeKind;
  agentVersion: string;
  maxSessions: number;
  sessions: SessionControl;
  logger: Logger;
  /** The Worker refused this host for good (bad token): the process should exit. */
  onRefused(status: number, body: string): void;
  timing?: TunnelTiming;
}

/** The host channel of the tunnel: registers the host and carries session start/stop requests. */
export class HostControl {
  readonly #o: HostControlOptions;
  readonly #socket: ReconnectingSocket;

  constructor(options: HostControlOptions) {
    this.#o = options;
    const url = new URL("/v1/tunnel/host", toWs(options.workerUrl));
    url.searchParams.set("host_id", options.hostId);
    this.#socket = new ReconnectingSocket({
      url: url.toString(),
      headers: () => ({ authorization: `Bearer ${options.hostToken}` }),
      logger: options.logger,
      timing: options.timing,
      onOpen: (socket) =>
        socket.send({
          type: "host_hello",
          v: TUNNEL_PROTOCOL_VERSION,
          host_id: options.hostId,
          runtime: options.runtime,
          agent_version: options.agentVersion,
          sessions: options.sessions.running(),
          max_sessions: options.maxSessions,
        } satisfies HostToRegistry),
      onFrame: (text) => void this.#onFrame(text),
      onPermanentFailure: options.onRefused,
    });
  }

  start(): void {
    this.#socket.start();
  }

  close(): void {
    this.#socket.close();
  }

  async #onFrame(text: string): Promise<void> {
    const json = tryParseJson(text);
    const parsed = json.ok ? RegistryToHostSchema.safeParse(json.value) : null;
    if (!parsed?.success) {
      this.#o.logger.warn({ frame: text.slice(0, 200) }, "bad frame from the host registry");
      this.#socket.send({
        type: "error",
        error: { code: "bad_frame", message: "unparseable frame" },
      } satisfies HostToRegistry);
      return;
    }
    await this.#handle(parsed.data);
  }

  async #handle(frame: RegistryToHost): Promise<void> {
    const log = this.#o.logger;
    switch (frame.type) {
      case "host_welcome":
        log.info({ host_id: frame.host_id }, "registered with the Worker");
        return;
      case "session_start":
        return this.#ack(frame.req_id, () => this.#o.sessions.start(frame.session_id, frame.spec));
      case "session_stop":
        return this.#ack(frame.req_id, () => this.#o.sessions.stop(frame.session_id, frame.reason));
      case "error":
        log.warn({ code: frame.error.code, message: frame.error.message }, "host registry reported an error");
        return;
    }
  }

  async #ack(reqId: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
      this.#socket.send({ type: "ack", req_id: reqId, ok: true } satisfies HostToRegistry);
    } catch (err) {
      const error: TunnelError = {
        code: "runtime_error",
        message: err instanceof Error ? err.message : String(err),
      };
      this.#o.logger.warn({ req_id: reqId, error: error.message }, "request failed");
      this.#socket.send({ type: "ack", req_id: reqId, ok: false, error } satisfies HostToRegistry);
    }
  }
}
