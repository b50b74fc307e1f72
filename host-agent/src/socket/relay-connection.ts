/**
 * One accepted connection on a session's relay socket: frames lines, answers each request on its
 * own (a slow caller tool never holds up the others), enforces `hello` before anything but
 * `ping`, and cancels everything in flight when it closes.
 */
import type { Socket } from "node:net";
import { JsonLineWriter } from "../../../lib/json-line-writer.js";
import type { Logger } from "../../../lib/log.js";
import { LineSplitter } from "../../../protocol/line-splitter.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import { type JsonRpcId, type JsonRpcRequest, SOCKET_PROTOCOL_VERSION } from "../../../protocol/socket.js";
import { runCallerToolCall } from "./caller-tool-call.js";
import { classifyLine } from "./incoming-request.js";
import { parseRelayRequest, type RelayRequest } from "./relay-methods.js";
import { callerToolError, RpcError } from "./rpc-error.js";
import type { RelayHandlers } from "./types.js";

/** What a connection needs from the server that accepted it. */
export interface RelayConnectionContext {
  readonly sessionId: string;
  readonly maxLineBytes: number;
  readonly helloTimeoutMs: number;
  readonly maxInFlight: number;
  /** How long a closing connection may take to flush before it is destroyed. */
  readonly closeGraceMs: number;
  readonly logger: Logger;
  readonly callerTool: RelayHandlers["callerTool"];
  tokenMatches(presented: string): boolean;
  /** The serialized `caller_tools_config` notification to push after `hello`, if any. */
  configLine(): string | undefined;
  /** Backstop deadline of one caller tool call. */
  callDeadlineMs(): number;
  /** Called once, after the socket has closed. */
  onClosed(connection: RelayConnection): void;
}

/** Failed `hello`s after which the connection is dropped. */
const MAX_AUTH_FAILURES = 3;

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

export class RelayConnection {
  readonly closed: Promise<void>;
  readonly #socket: Socket;
  readonly #ctx: RelayConnectionContext;
  readonly #log: Logger;
  readonly #splitter: LineSplitter;
  readonly #writer: JsonLineWriter;
  readonly #inFlight = new Map<JsonRpcId, InFlight>();
  readonly #openedAt = Date.now();
  #authenticated = false;
  #authFailures = 0;
  #helloTimer: NodeJS.Timeout | undefined;
  #shuttingDown = false;

  constructor(socket: Socket, ctx: RelayConnectionContext, id: number) {
    this.#socket = socket;
    this.#ctx = ctx;
    this.#log = ctx.logger.child({ conn: id });
    this.#splitter = new LineSplitter(ctx.maxLineBytes);
    this.#writer = new JsonLineWriter(socket, {
      // Reading pauses while the peer is not reading, so this only guards against pathology.
      maxQueuedBytes: Math.max(64 * 1024 * 1024, ctx.maxLineBytes * 16),
      onOverflow: () => this.#drop("peer stopped reading (write queue overflow)"),
      // Only this side pauses: if both did, two full buffers would wait on each other forever.
      onPressure: (blocked) => (blocked ? socket.pause() : socket.resume()),
    });
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.once("close", () => this.#onClose());
    socket.on("error", (err) => this.#log.debug({ err: err.message }, "relay connection error"));
    socket.on("data", (chunk: Buffer) => this.#onLines(this.#splitter.push(chunk)));
    socket.on("end", () => this.#onLines(this.#splitter.end()));
    this.#helloTimer = setTimeout(() => this.#drop("no hello in time"), ctx.helloTimeoutMs);
    this.#log.info("relay connection opened");
  }

  get authenticated(): boolean {
    return this.#authenticated;
  }

  /** Sends a pre-serialized notification if this connection has completed `hello`. */
  pushIfAuthenticated(line: string): void {
    if (this.#authenticated && !this.#shuttingDown) this.#writer.writeLine(line);
  }

  /**
   * Answers every request still in flight with a `session_ended` error, ends the connection and
   * resolves once the socket has closed (destroying it if it does not close within the grace).
   */
  async shutdown(message: string): Promise<void> {
    if (!this.#shuttingDown) {
      this.#shuttingDown = true;
      const ending = [...this.#inFlight.values()];
      for (const call of ending) call.controller.abort(callerToolError("session_ended", message));
      await Promise.allSettled(ending.map((call) => call.done));
      this.#writer.end();
      const timer = setTimeout(() => this.#socket.destroy(), this.#ctx.closeGraceMs);
      void this.closed.finally(() => clearTimeout(timer));
    }
    await this.closed;
  }

  #drop(reason: string): void {
    this.#log.warn({ reason }, "dropping relay connection");
    this.#socket.destroy();
  }

  #onClose(): void {
    clearTimeout(this.#helloTimer);
    const closedError = callerToolError("session_ended", "the relay connection closed");
    for (const call of this.#inFlight.values()) call.controller.abort(closedError);
    this.#log.info(
      {
        up_ms: Date.now() - this.#openedAt,
        in_flight: this.#inFlight.size,
        authenticated: this.#authenticated,
      },
      "relay connection closed",
    );
    this.#ctx.onClosed(this);
  }

  #onLines(events: ReturnType<LineSplitter["push"]>): void {
    for (const event of events) {
      if (this.#shuttingDown) return;
      if (event.kind === "oversized") {
        this.#fault(
          null,
          new RpcError(
            RpcErrorCode.InvalidRequest,
            `invalid request: line of ${event.bytes} bytes exceeds the ${this.#ctx.maxLineBytes} byte limit`,
          ),
        );
        continue;
      }
      const line = classifyLine(event.text);
      if (line.kind === "fault") this.#fault(line.id, line.error);
      else if (line.kind === "notification") this.#log.debug({ method: line.method }, "ignored notification");
      else this.#onRequest(line.request);
    }
  }

  #fault(id: JsonRpcId | null, error: RpcError): void {
    this.#log.warn({ id, code: error.code, reason: error.message }, "relay protocol error");
    this.#writer.write({ jsonrpc: "2.0", id, error: error.toErrorObject() });
  }

  #onRequest(request: JsonRpcRequest): void {
    let parsed: RelayRequest;
    try {
      parsed = parseRelayRequest(request, this.#authenticated);
    } catch (err) {
      // Whatever went wrong, this socket's data handler must not take the host-agent down.
      if (!(err instanceof RpcError)) this.#log.error({ err }, "relay request parsing failed");
      this.#fault(
        request.id,
        err instanceof RpcError ? err : new RpcError(RpcErrorCode.InternalError, "internal error"),
      );
      return;
    }
    if (parsed.method === "ping") this.#respond(request.id, {});
    else if (parsed.method === "hello") this.#hello(request.id, parsed.params.session_token);
    else this.#startCall(request.id, parsed.params);
  }

  #hello(id: JsonRpcId, token: string): void {
    if (!this.#ctx.tokenMatches(token)) {
      this.#authFailures += 1;
      this.#fault(id, new RpcError(RpcErrorCode.Unauthenticated, "unauthenticated: invalid session token"));
      if (this.#authFailures >= MAX_AUTH_FAILURES) {
        this.#log.warn(
          { failures: this.#authFailures },
          "closing relay connection after repeated bad tokens",
        );
        this.#writer.end();
      }
      return;
    }
    const first = !this.#authenticated;
    this.#authenticated = true;
    clearTimeout(this.#helloTimer);
    this.#respond(id, { session_id: this.#ctx.sessionId, protocol_version: SOCKET_PROTOCOL_VERSION });
    if (first) {
      this.#log.info("relay connection authenticated");
      const config = this.#ctx.configLine();
      if (config !== undefined) this.#writer.writeLine(config);
    }
  }

  #startCall(id: JsonRpcId, call: Extract<RelayRequest, { method: "caller_tool" }>["params"]): void {
    if (this.#inFlight.has(id)) {
      this.#fault(
        id,
        new RpcError(RpcErrorCode.InvalidRequest, "invalid request: this id is already in flight"),
      );
      return;
    }
    if (this.#inFlight.size >= this.#ctx.maxInFlight) {
      this.#fault(
        id,
        new RpcError(RpcErrorCode.ServerError, "too many requests in flight on this connection"),
      );
      return;
    }
    const controller = new AbortController();
    const done = runCallerToolCall(this.#ctx.callerTool, call, controller, this.#ctx.callDeadlineMs())
      .then(
        (result) => this.#respond(id, result),
        (err: unknown) => this.#callFailed(id, call.tool, err),
      )
      .finally(() => {
        if (this.#inFlight.get(id)?.controller === controller) this.#inFlight.delete(id);
      });
    this.#inFlight.set(id, { controller, done });
  }

  #callFailed(id: JsonRpcId, tool: string, err: unknown): void {
    const error = err instanceof RpcError ? err : new RpcError(RpcErrorCode.InternalError, "internal error");
    if (error.code === RpcErrorCode.InternalError) {
      this.#log.error({ err: error.cause ?? err, id, tool }, "caller tool handler failed");
    } else {
      this.#log.debug({ id, tool, code: error.code, data: error.data }, "caller tool call failed");
    }
    this.#writer.write({ jsonrpc: "2.0", id, error: error.toErrorObject() });
  }

  #respond(id: JsonRpcId, result: unknown): void {
    const line = JSON.stringify({ jsonrpc: "2.0", id, result });
    // The peer would drop an oversized line and wait for an answer that never comes.
    if (Buffer.byteLength(line) > this.#ctx.maxLineBytes) {
      const size = Buffer.byteLength(line);
      const error = callerToolError(
        "caller_error",
        `the result is too large to relay (${size} bytes; the limit is ${this.#ctx.maxLineBytes})`,
      );
      this.#log.warn({ id, bytes: size }, "relay result too large");
      this.#writer.write({ jsonrpc: "2.0", id, error: error.toErrorObject() });
      return;
    }
    this.#writer.writeLine(line);
  }
}
