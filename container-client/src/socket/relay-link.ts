/**
 * The container-client's lasting link to the host-agent: connects, authenticates with `hello`,
 * reconnects with capped, jittered backoff whenever the socket drops, and stops for good only
 * when the token is rejected or the client closes.
 */
import { ReconnectBackoff } from "../../../lib/backoff.js";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import {
  CallerToolResultSchema,
  DEFAULT_MAX_LINE_BYTES,
  HelloResultSchema,
  SocketMethod,
} from "../../../protocol/socket.js";
import { AuthRejectedError, RelayCallError } from "./relay-errors.js";
import { SocketRpcConnection } from "./socket-rpc-connection.js";

export interface RelayLinkOptions {
  socketPath: string;
  sessionToken: string;
  logger: Logger;
  onConfig(config: CallerToolsConfig): void;
  client: { name: string; version: string };
  maxLineBytes?: number;
  backoff?: ReconnectBackoff;
  helloTimeoutMs?: number;
  /** How long a call made while disconnected waits for the link to come back; default 10 s. */
  connectWaitMs?: number;
}

export interface CallOptions {
  timeoutMs: number;
  timeoutMessage: string;
  signal?: AbortSignal;
}

interface Waiter {
  resolve(connection: SocketRpcConnection): void;
  reject(error: RelayCallError): void;
}

export class RelayLink {
  readonly #options: RelayLinkOptions;
  readonly #log: Logger;
  readonly #backoff: ReconnectBackoff;
  #current: SocketRpcConnection | undefined;
  #waiters = new Set<Waiter>();
  #permanent: AuthRejectedError | undefined;
  #closed = false;
  #running: Promise<void> | undefined;
  #wakeSleep: (() => void) | undefined;

  constructor(options: RelayLinkOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: "relay-link" });
    this.#backoff = options.backoff ?? new ReconnectBackoff();
  }

  get connected(): boolean {
    return this.#current?.isOpen === true;
  }

  /** Starts connecting in the background; calls made before the link is up wait for it. */
  start(): void {
    this.#running ??= this.#run();
  }

  /** Runs one caller tool; resolves with the caller's result or rejects with a RelayCallError. */
  async callerTool(tool: string, args: JsonObject, options: CallOptions): Promise<JsonValue> {
    const startedAt = Date.now();
    const waitMs = Math.min(this.#options.connectWaitMs ?? 10_000, options.timeoutMs);
    const connection = await this.#waitConnected(waitMs, options.signal);
    const result = await connection.request(
      SocketMethod.callerTool,
      { tool, arguments: args },
      { ...options, timeoutMs: Math.max(1, options.timeoutMs - (Date.now() - startedAt)) },
    );
    const parsed = CallerToolResultSchema.safeParse(result);
    if (!parsed.success)
      throw new RelayCallError("rpc_error", "the host-agent sent a result that is not JSON");
    return parsed.data;
  }

  /** Stops reconnecting, closes the socket and fails every waiting call with `closed`. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wakeSleep?.();
    this.#rejectWaiters(new RelayCallError("closed", "the container-client is shutting down"));
    this.#current?.close();
    await this.#running;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      const connection = await this.#connectOnce();
      if (connection) {
        const upSince = Date.now();
        this.#current = connection;
        for (const waiter of [...this.#waiters]) waiter.resolve(connection);
        await connection.closed;
        this.#current = undefined;
        this.#backoff.connectionEnded(Date.now() - upSince);
        if (!this.#closed)
          this.#log.warn({ up_ms: Date.now() - upSince }, "relay connection lost; reconnecting");
      }
      if (this.#closed || this.#permanent) return;
      await this.#sleep(this.#backoff.next());
    }
  }

  async #connectOnce(): Promise<SocketRpcConnection | undefined> {
    const { socketPath, sessionToken, client } = this.#options;
    let connection: SocketRpcConnection | undefined;
    try {
      connection = await SocketRpcConnection.connect({
        path: socketPath,
        maxLineBytes: this.#options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
        logger: this.#log,
        onConfig: (config) => this.#options.onConfig(config),
      });
      const result = await connection.request(
        SocketMethod.hello,
        { session_token: sessionToken, client },
        { timeoutMs: this.#options.helloTimeoutMs ?? 10_000, timeoutMessage: "no answer to hello in time" },
      );
      const hello = HelloResultSchema.safeParse(result);
      if (!hello.success) throw new RelayCallError("rpc_error", "invalid hello result");
      if (this.#closed) throw new RelayCallError("closed", "closed while connecting");
      this.#log.info(
        { session_id: hello.data.session_id, attempt: this.#backoff.attempt },
        "relay connected",
      );
      return connection;
    } catch (err) {
      connection?.close();
      if (
        err instanceof RelayCallError &&
        err.code === "rpc_error" &&
        err.rpcCode === RpcErrorCode.Unauthenticated
      ) {
        this.#permanent = new AuthRejectedError("the host-agent rejected the session token");
        this.#log.error("the host-agent rejected the session token; caller tools are unavailable");
        this.#rejectWaiters(new RelayCallError("not_connected", this.#permanent.message));
        return undefined;
      }
      const reason = err instanceof Error ? err.message : String(err);
      this.#log.warn({ path: socketPath, attempt: this.#backoff.attempt, reason }, "relay connect failed");
      return undefined;
    }
  }

  #waitConnected(ms: number, signal: AbortSignal | undefined): Promise<SocketRpcConnection> {
    const current = this.#current;
    if (current?.isOpen) return Promise.resolve(current);
    if (this.#closed)
      return Promise.reject(new RelayCallError("closed", "the container-client is shutting down"));
    if (this.#permanent) return Promise.reject(new RelayCallError("not_connected", this.#permanent.message));
    if (signal?.aborted) return Promise.reject(new RelayCallError("cancelled", "the call was cancelled"));
    return new Promise((resolve, reject) => {
      const onAbort = () => waiter.reject(new RelayCallError("cancelled", "the call was cancelled"));
      const timer = setTimeout(
        () => waiter.reject(new RelayCallError("not_connected", "not connected to the host-agent")),
        ms,
      );
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#waiters.delete(waiter);
      };
      const waiter: Waiter = {
        resolve: (connection) => {
          settle();
          resolve(connection);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      };
      this.#waiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #rejectWaiters(error: RelayCallError): void {
    for (const waiter of [...this.#waiters]) waiter.reject(error);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeSleep = done;
    });
  }
}
