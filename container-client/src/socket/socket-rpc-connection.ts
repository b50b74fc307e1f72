/**
 * One connection to the host-agent's relay socket: sends JSON-RPC requests and matches their
 * answers. Every request has a deadline and a cancel path; when the socket closes, everything
 * still pending is rejected with `connection_lost`.
 */
import { connect, type Socket } from "node:net";
import { JsonLineWriter } from "../../../lib/json-line-writer.js";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { type LineEvent, LineSplitter } from "../../../protocol/line-splitter.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import { classifyIncoming } from "./incoming-message.js";
import { RelayCallError } from "./relay-errors.js";

export interface SocketRpcConnectionOptions {
  path: string;
  maxLineBytes: number;
  logger: Logger;
  /** Called for every valid `caller_tools_config` the host-agent pushes. */
  onConfig(config: CallerToolsConfig): void;
  connectTimeoutMs?: number;
}

export interface RequestOptions {
  timeoutMs: number;
  /** Message of the `timeout` error, so the droid reads what actually took too long. */
  timeoutMessage?: string;
  signal?: AbortSignal;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: RelayCallError): void;
}

export class SocketRpcConnection {
  readonly closed: Promise<void>;
  readonly #socket: Socket;
  readonly #options: SocketRpcConnectionOptions;
  readonly #writer: JsonLineWriter;
  readonly #splitter: LineSplitter;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #open = true;

  private constructor(socket: Socket, options: SocketRpcConnectionOptions) {
    this.#socket = socket;
    this.#options = options;
    this.#splitter = new LineSplitter(options.maxLineBytes);
    this.#writer = new JsonLineWriter(socket, {
      // Never pause reading here: the host-agent pauses its reads under pressure, and two sides
      // that both stopped reading would wait on each other forever.
      maxQueuedBytes: Math.max(64 * 1024 * 1024, options.maxLineBytes * 16),
      onOverflow: () => socket.destroy(),
    });
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.once("close", () => this.#onClose());
    socket.on("data", (chunk: Buffer) => this.#onLines(this.#splitter.push(chunk)));
    socket.on("end", () => this.#onLines(this.#splitter.end()));
  }

  /** Connects to the socket; rejects if it cannot within the connect timeout. */
  static connect(options: SocketRpcConnectionOptions): Promise<SocketRpcConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(options.path);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new RelayCallError("not_connected", `connecting to ${options.path} timed out`));
      }, options.connectTimeoutMs ?? 5_000);
      socket.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        socket.on("error", (err) => options.logger.debug({ err: err.message }, "relay socket error"));
        resolve(new SocketRpcConnection(socket, options));
      });
    });
  }

  get isOpen(): boolean {
    return this.#open;
  }

  /** Sends a request; resolves with its result or rejects with a RelayCallError. */
  request(method: string, params: unknown, options: RequestOptions): Promise<unknown> {
    if (!this.#open)
      return Promise.reject(new RelayCallError("connection_lost", "connection to the host-agent was lost"));
    if (options.signal?.aborted)
      return Promise.reject(new RelayCallError("cancelled", "the call was cancelled"));
    const id = this.#nextId++;
    const line = JSON.stringify({ jsonrpc: "2.0", id, method, params });
    const bytes = Buffer.byteLength(line);
    // The host-agent would drop the line unanswered; fail now instead of at the deadline.
    if (bytes > this.#options.maxLineBytes) {
      return Promise.reject(
        new RelayCallError(
          "too_large",
          `the request is too large to relay (${bytes} bytes; the limit is ${this.#options.maxLineBytes})`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => finish(new RelayCallError("cancelled", "the call was cancelled"));
      const timer = setTimeout(
        () =>
          finish(new RelayCallError("timeout", options.timeoutMessage ?? `no answer to ${method} in time`)),
        options.timeoutMs,
      );
      const finish = (error: RelayCallError | undefined, result?: unknown) => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        this.#pending.delete(id);
        if (error) reject(error);
        else resolve(result);
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, { resolve: (result) => finish(undefined, result), reject: finish });
      this.#writer.writeLine(line);
    });
  }

  /** Closes the connection; pending requests fail with `connection_lost`. */
  close(): void {
    this.#socket.destroy();
  }

  #onClose(): void {
    this.#open = false;
    const lost = new RelayCallError("connection_lost", "connection to the host-agent was lost");
    for (const pending of [...this.#pending.values()]) pending.reject(lost);
  }

  #onLines(events: LineEvent[]): void {
    const log = this.#options.logger;
    for (const event of events) {
      if (event.kind === "oversized") {
        log.warn({ bytes: event.bytes }, "dropped an oversized line from the host-agent");
        continue;
      }
      const message = classifyIncoming(event.text);
      switch (message.kind) {
        case "result":
        case "error": {
          const pending = typeof message.id === "number" ? this.#pending.get(message.id) : undefined;
          if (!pending) {
            const error = message.kind === "error" ? message.error : undefined;
            log.warn({ id: message.id, error }, "answer for no pending request");
          } else if (message.kind === "result") pending.resolve(message.result);
          else {
            const { code, message: text, data } = message.error;
            pending.reject(new RelayCallError("rpc_error", text, code, data));
          }
          break;
        }
        case "config":
          this.#options.onConfig(message.config);
          break;
        case "request":
          // The host-agent serves us; we serve nothing back.
          this.#writer.write({
            jsonrpc: "2.0",
            id: message.id,
            error: {
              code: RpcErrorCode.MethodNotFound,
              message: `method not found: ${message.method.slice(0, 64)}`,
            },
          });
          break;
        case "notification":
          log.debug({ method: message.method }, "ignored notification");
          break;
        case "invalid":
          log.warn({ reason: message.reason }, "invalid message from the host-agent");
          break;
      }
    }
  }
}
