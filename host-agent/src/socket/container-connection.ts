/**
 * One accepted connection on a session's container socket: a JSON-RPC peer (one message per
 * line) that must authenticate with `hello` before anything but `ping`, as the runner or as a
 * container-client. Requests run concurrently (a slow caller tool never holds up the others).
 */
import type { Socket } from "node:net";
import type { Logger } from "../../../lib/log.js";
import { LineConnection } from "../../../lib/rpc/line-connection.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import type { AgentState } from "../../../protocol/agent-events.js";
import { Limits } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  AgentEventsParamsSchema,
  CallerToolParamsSchema,
  HelloParamsSchema,
  PingParamsSchema,
  SOCKET_PROTOCOL_VERSION,
  SocketMethod,
} from "../../../protocol/socket.js";
import type { ContainerHandlers } from "./types.js";

/** What a connection needs from the server that accepted it. */
export interface ConnectionContext {
  readonly sessionId: string;
  readonly helloTimeoutMs: number;
  readonly logger: Logger;
  readonly handlers: ContainerHandlers;
  tokenMatches(presented: string): boolean;
  /** The serialized config notification's params to push after a client's hello, if any. */
  config(): unknown;
}

/** Failed `hello`s after which the connection is dropped. */
const MAX_AUTH_FAILURES = 3;
/** Requests one connection may have in flight. */
const MAX_IN_FLIGHT = 1024;

export type Role = "client" | "runner";

export class ContainerConnection {
  readonly closed: Promise<void>;
  readonly #connection: LineConnection;
  readonly #ctx: ConnectionContext;
  readonly #log: Logger;
  #role: Role | null = null;
  #authFailures = 0;
  #helloTimer: NodeJS.Timeout | undefined;

  constructor(socket: Socket, ctx: ConnectionContext, id: number) {
    this.#ctx = ctx;
    this.#log = ctx.logger.child({ conn: id });
    this.#connection = new LineConnection(socket, {
      maxLineBytes: Limits.lineBytes,
      logger: this.#log,
      maxInFlight: MAX_IN_FLIGHT,
      // This end pauses under pressure; the container end never does (see LineConnection).
      pauseOnPressure: true,
      gate: (method) =>
        this.#role !== null || method === SocketMethod.hello || method === SocketMethod.ping
          ? undefined
          : new RpcError(RpcErrorCode.Unauthenticated, "unauthenticated: send hello first"),
    });
    this.closed = this.#connection.closed;
    this.#serve(this.#connection.peer);
    this.#helloTimer = setTimeout(() => {
      this.#log.warn("no hello in time; closing the connection");
      this.#connection.destroy();
    }, ctx.helloTimeoutMs);
    this.#helloTimer.unref();
    void this.closed.then(() => {
      clearTimeout(this.#helloTimer);
      if (this.#role === "runner") ctx.handlers.runnerGone(this);
    });
  }

  get peer(): RpcPeer {
    return this.#connection.peer;
  }

  get role(): Role | null {
    return this.#role;
  }

  /** Sends a notification if this connection is an authenticated client. */
  notifyClient(method: string, params: unknown): void {
    if (this.#role === "client") this.peer.notify(method, params);
  }

  /** Ends the connection after queued lines are written; destroys it if it lingers. */
  async shutdown(graceMs: number): Promise<void> {
    this.#connection.end();
    const timer = setTimeout(() => this.#connection.destroy(), graceMs);
    await this.closed;
    clearTimeout(timer);
  }

  destroy(): void {
    this.#connection.destroy();
  }

  #serve(peer: RpcPeer): void {
    const { handlers } = this.#ctx;
    peer.handle(SocketMethod.ping, PingParamsSchema, () => ({}));
    peer.handle(SocketMethod.hello, HelloParamsSchema, (params) => {
      this.#hello(params.session_token, params.role, params.agent);
      return { session_id: this.#ctx.sessionId, protocol_version: SOCKET_PROTOCOL_VERSION };
    });
    peer.handle(SocketMethod.callerTool, CallerToolParamsSchema, (params, ctx) =>
      handlers.callerTool(params, ctx),
    );
    peer.onNotification(SocketMethod.agentEvents, AgentEventsParamsSchema, (params) => {
      if (this.#role === "runner") handlers.agentEvents(params.events);
    });
  }

  #hello(token: string, role: Role, agent: AgentState | undefined): void {
    if (!this.#ctx.tokenMatches(token)) {
      this.#authFailures += 1;
      if (this.#authFailures >= MAX_AUTH_FAILURES) {
        this.#log.warn({ failures: this.#authFailures }, "closing the connection after repeated bad tokens");
        setImmediate(() => this.#connection.end());
      }
      throw new RpcError(RpcErrorCode.Unauthenticated, "unauthenticated: invalid session token");
    }
    if (this.#role !== null) return;
    this.#role = role;
    clearTimeout(this.#helloTimer);
    this.#log.info({ role }, "container connection authenticated");
    if (role === "runner") {
      // After the answer to hello, so the runner sees its hello succeed before any request.
      setImmediate(() =>
        this.#ctx.handlers.runnerConnected(this, agent ?? { status: "idle", delivered_message_seq: 0 }),
      );
    } else {
      const config = this.#ctx.config();
      if (config !== undefined) setImmediate(() => this.notifyClient(SocketMethod.callerToolsConfig, config));
    }
  }
}
