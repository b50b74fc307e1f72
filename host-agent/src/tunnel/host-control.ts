import type { Logger } from "../../../lib/log.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  HostHelloResultSchema,
  type RuntimeKind,
  type SessionSpec,
  SessionStartParamsSchema,
  SessionStopParamsSchema,
  TUNNEL_PROTOCOL_VERSION,
  TunnelMethod,
} from "../../../protocol/tunnel.js";
import { type TunnelTiming, toWs } from "./reconnecting-socket.js";
import { TunnelLink } from "./tunnel-link.js";

/** What the host control channel asks of the host's sessions. */
export interface SessionControl {
  start(sessionId: string, spec: SessionSpec): Promise<void>;
  stop(sessionId: string, reason: string): Promise<void>;
  running(): string[];
  /** The host channel is (back) up: session tunnels should reconnect now. */
  reconnectTunnels(): void;
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

const HELLO_TIMEOUT_MS = 15_000;

/** The host channel of the tunnel: registers the host, reports its sessions, carries start/stop. */
export class HostControl {
  readonly #o: HostControlOptions;
  readonly #link: TunnelLink;

  constructor(options: HostControlOptions) {
    this.#o = options;
    const url = new URL("/v1/tunnel/host", toWs(options.workerUrl));
    url.searchParams.set("host_id", options.hostId);
    this.#link = new TunnelLink({
      url: url.toString(),
      hostToken: options.hostToken,
      logger: options.logger,
      timing: options.timing,
      serve: (peer) => this.#serve(peer),
      opened: (peer) => void this.#hello(peer),
      onPermanentFailure: options.onRefused,
    });
  }

  start(): void {
    this.#link.start();
  }

  close(): void {
    this.#link.close();
  }

  #serve(peer: RpcPeer): void {
    const { sessions, logger } = this.#o;
    peer.handle(TunnelMethod.sessionStart, SessionStartParamsSchema, async (params) => {
      await sessions.start(params.session_id, params.spec).catch((err: unknown) => {
        throw toRpcError(err, logger, `could not start session ${params.session_id}`);
      });
      return {};
    });
    peer.handle(TunnelMethod.sessionStop, SessionStopParamsSchema, async (params) => {
      await sessions.stop(params.session_id, params.reason).catch((err: unknown) => {
        throw toRpcError(err, logger, `could not stop session ${params.session_id}`);
      });
      return {};
    });
  }

  async #hello(peer: RpcPeer): Promise<void> {
    const { hostId, runtime, agentVersion, maxSessions, sessions, logger } = this.#o;
    try {
      const raw = await peer.request(
        TunnelMethod.hostHello,
        {
          v: TUNNEL_PROTOCOL_VERSION,
          host_id: hostId,
          runtime,
          agent_version: agentVersion,
          sessions: sessions.running(),
          max_sessions: maxSessions,
        },
        { timeoutMs: HELLO_TIMEOUT_MS, timeoutMessage: "no answer to host_hello" },
      );
      const hello = HostHelloResultSchema.parse(raw);
      logger.info({ host_id: hello.host_id }, "registered with the Worker");
      sessions.reconnectTunnels();
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) return;
      logger.error({ err }, "host_hello failed; reconnecting");
      this.#link.drop();
    }
  }
}

/** Errors of the runtime become tunnel errors with a reason; their messages say what to do. */
function toRpcError(err: unknown, logger: Logger, what: string): RpcError {
  if (err instanceof RpcError) return err;
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "runtime_error";
  const reason = code === "image_not_found" || code === "host_full" ? code : "runtime_error";
  const message = err instanceof Error ? err.message : String(err);
  logger.warn({ reason, error: message }, what);
  return new RpcError(RpcErrorCode.ServerError, message, { reason });
}
