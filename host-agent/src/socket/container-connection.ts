/**
 * One accepted connection on a project's container socket: a JSON-RPC peer (one message per
 * line) that must authenticate with `hello` before anything but `ping`, as the runner (the
 * container's secret) or as a container-client (a session's secret, which binds the connection
 * to that session for good). Requests run concurrently (a slow caller tool never holds up the
 * others).
 */
import type { Socket } from "node:net";
import type { Logger } from "../../../lib/log.js";
import { LineConnection } from "../../../lib/rpc/line-connection.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { Limits } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  checkResult,
  type NotificationMethod,
  type ParsedParams,
  type SentParams,
} from "../../../protocol/rpc/method.js";
import { SOCKET_PROTOCOL_VERSION, SocketMethods } from "../../../protocol/socket.js";
import type { ContainerHandlers, OublietteForward, SocketAuth } from "./types.js";

/** What a connection needs from the server that accepted it. */
export interface ConnectionContext {
  readonly projectId: string;
  readonly helloTimeoutMs: number;
  readonly logger: Logger;
  readonly handlers: ContainerHandlers;
  readonly auth: SocketAuth;
  /** The config notification's params to push to a session's client after its hello, if any. */
  config(sessionId: string): CallerToolsConfig | undefined;
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
  #sessionId: string | null = null;
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
        this.#role !== null || method === SocketMethods.hello.name || method === SocketMethods.ping.name
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

  /** The session a client connection is bound to. */
  get sessionId(): string | null {
    return this.#sessionId;
  }

  /** Sends a notification if this connection is an authenticated client of `sessionId`. */
  notifyClient<M extends NotificationMethod>(sessionId: string, method: M, params: SentParams<M>): void {
    if (this.#role === "client" && this.#sessionId === sessionId) this.peer.notify(method, params);
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
    peer.handle(SocketMethods.ping, () => ({}));
    peer.handle(SocketMethods.hello, async (params) => {
      // A session's client may be back before the runner that names its secret (a re-adopted
      // container): it waits for the runner rather than being refused for good.
      if (params.role === "client" && params.session_token !== undefined && this.#role === null) {
        if (this.#ctx.auth.client(params.session_token) === null) await this.#ctx.auth.settled;
      }
      this.#hello(params);
      return {
        ...(this.#sessionId !== null ? { session_id: this.#sessionId } : {}),
        project_id: this.#ctx.projectId,
        protocol_version: SOCKET_PROTOCOL_VERSION,
      };
    });
    peer.handle(SocketMethods.callerTool, (params, ctx) => {
      // Only a client has a session; the runner makes no calls of its own.
      const sessionId = this.#sessionId;
      if (sessionId === null)
        throw new RpcError(RpcErrorCode.Unauthenticated, "caller_tool needs a session's connection");
      return handlers.callerTool(sessionId, params, ctx);
    });
    // Passed on to the session's object; its answer is checked against the socket's schema and sent as it came.
    const forward = <M extends OublietteForward>(method: M) =>
      peer.handle(method, async (params, ctx) =>
        checkResult(
          method,
          await handlers.oubliette(this.#clientSession(method.name), method.name, params, ctx),
        ),
      );
    forward(SocketMethods.oublietteTools);
    forward(SocketMethods.oublietteCallTool);
    forward(SocketMethods.sessionMessage);
    forward(SocketMethods.sessionEvents);
    const { approval } = handlers;
    if (approval) {
      peer.handle(SocketMethods.approval, (params, ctx) => {
        // Only the runner, which owns every agent's stdio, asks for an agent.
        if (this.#role !== "runner")
          throw new RpcError(RpcErrorCode.Unauthenticated, "approval needs the runner's connection");
        return approval(params, ctx);
      });
    }
    const { git } = handlers;
    if (git) {
      peer.handle(SocketMethods.gitList, (params) => git.list(this.#clientSession("git_list"), params));
      peer.handle(SocketMethods.gitPush, (params) => git.push(this.#clientSession("git_push"), params));
      peer.handle(SocketMethods.gitFetch, (params) => git.fetch(this.#clientSession("git_fetch"), params));
      peer.handle(SocketMethods.gitFetchRead, (params) =>
        git.read(this.#clientSession("git_fetch_read"), params),
      );
    }
    peer.onNotification(SocketMethods.agentEvents, (params) => {
      if (this.#role === "runner") handlers.agentEvents(params.session_id, params.events);
    });
  }

  /** The session of a client connection; the runner has none and may not ask. */
  #clientSession(method: string): string {
    if (this.#sessionId === null)
      throw new RpcError(RpcErrorCode.Unauthenticated, `${method} needs a session's connection`);
    return this.#sessionId;
  }

  #hello(params: ParsedParams<typeof SocketMethods.hello>): void {
    const { role } = params;
    // The first successful hello binds the connection; a second one cannot change what it is.
    const sessionId =
      role === "runner"
        ? null
        : params.session_token !== undefined
          ? this.#ctx.auth.client(params.session_token)
          : null;
    const valid =
      role === "runner"
        ? params.runner_token !== undefined && this.#ctx.auth.runner(params.runner_token)
        : sessionId !== null;
    if (!valid) {
      this.#authFailures += 1;
      if (this.#authFailures >= MAX_AUTH_FAILURES) {
        this.#log.warn({ failures: this.#authFailures }, "closing the connection after repeated bad tokens");
        setImmediate(() => this.#connection.end());
      }
      throw new RpcError(RpcErrorCode.Unauthenticated, "unauthenticated: invalid session token");
    }
    if (this.#role !== null) return;
    if (role === "runner") {
      const refusal = this.#ctx.handlers.admitRunner?.(this) ?? null;
      if (refusal !== null) {
        this.#log.warn({ refusal }, "refused a second runner");
        throw new RpcError(RpcErrorCode.ServerError, refusal, { reason: "runner_connected" });
      }
    }
    this.#role = role;
    this.#sessionId = sessionId;
    clearTimeout(this.#helloTimer);
    this.#log.info({ role, session: sessionId ?? undefined }, "container connection authenticated");
    if (role === "runner") {
      const agents = params.agents ?? [];
      const ports = params.ports ?? {};
      // After the answer to hello, so the runner sees its hello succeed before any request.
      setImmediate(() => this.#ctx.handlers.runnerConnected(this, agents, ports));
    } else if (sessionId !== null) {
      const config = this.#ctx.config(sessionId);
      if (config !== undefined)
        setImmediate(() => this.notifyClient(sessionId, SocketMethods.callerToolsConfig, config));
    }
  }
}
