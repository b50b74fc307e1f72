/**
 * A lasting, authenticated connection to the host-agent's container socket, for the runner and
 * the container-client alike: connects, says `hello` with the session secret, and reconnects
 * (fast, capped backoff) whenever the socket drops — the host-agent may restart at any time and
 * serve the socket again at the same path. Stops for good only when the secret is rejected or
 * the owner closes it. Each connection is a fresh JSON-RPC peer.
 */
import { connect, type Socket } from "node:net";
import { ReconnectBackoff } from "../../../lib/backoff.js";
import type { Logger } from "../../../lib/log.js";
import { LineConnection } from "../../../lib/rpc/line-connection.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { withSocketPath } from "../../../lib/unix-path.js";
import { Limits } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { type HelloParams, SocketMethods } from "../../../protocol/socket.js";

export interface SocketSessionOptions {
  socketPath: string;
  logger: Logger;
  /** The hello params, built fresh for every connection (the runner reports its agent's state). */
  hello(): HelloParams;
  /** Registers what this side serves, on every new peer (before hello is sent). */
  serve(peer: RpcPeer): void;
  /** Runs once per connection, after hello succeeded: re-send what is pending. */
  connected(peer: RpcPeer): void;
  /** The connection dropped (or the session was closed). */
  disconnected?(): void;
  /** The host-agent rejected the secret: nothing will work; no more attempts. */
  rejected?(message: string): void;
  /** Offered messages that are not JSON-RPC (older wire forms). */
  adopt?(raw: unknown): boolean;
  backoff?: ReconnectBackoff;
  helloTimeoutMs?: number;
  connectTimeoutMs?: number;
}

export class SocketSession {
  readonly #o: SocketSessionOptions;
  readonly #backoff: ReconnectBackoff;
  #current: LineConnection | null = null;
  #peer: RpcPeer | null = null;
  #closed = false;
  #rejected = false;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  constructor(options: SocketSessionOptions) {
    this.#o = options;
    // A restarted host-agent serves the socket again within seconds: retry quickly.
    this.#backoff =
      options.backoff ??
      new ReconnectBackoff({ initialDelayMs: 50, maxDelayMs: 1_000, stablePeriodMs: 5_000 });
  }

  /** The authenticated peer of the current connection, or null while disconnected. */
  get peer(): RpcPeer | null {
    return this.#peer;
  }

  get rejected(): boolean {
    return this.#rejected;
  }

  start(): void {
    this.#running ??= this.#run();
  }

  /** Stops reconnecting and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    this.#current?.destroy();
    await this.#running;
  }

  async #run(): Promise<void> {
    while (!this.#closed && !this.#rejected) {
      const connection = await this.#connectOnce();
      if (connection) {
        const upSince = Date.now();
        await connection.closed;
        this.#current = null;
        this.#peer = null;
        this.#o.disconnected?.();
        this.#backoff.connectionEnded(Date.now() - upSince);
        if (!this.#closed)
          this.#o.logger.warn({ up_ms: Date.now() - upSince }, "socket connection lost; reconnecting");
      }
      if (this.#closed || this.#rejected) return;
      await this.#sleep(this.#backoff.next());
    }
  }

  async #connectOnce(): Promise<LineConnection | null> {
    let connection: LineConnection | undefined;
    try {
      const socket = await openSocket(this.#o.socketPath, this.#o.connectTimeoutMs ?? 5_000);
      connection = new LineConnection(socket, {
        maxLineBytes: Limits.lineBytes,
        logger: this.#o.logger,
        adopt: this.#o.adopt,
      });
      this.#current = connection;
      this.#o.serve(connection.peer);
      const hello = await connection.peer.request(SocketMethods.hello, this.#o.hello(), {
        timeoutMs: this.#o.helloTimeoutMs ?? 10_000,
        timeoutMessage: "no answer to hello in time",
      });
      if (this.#closed) throw new Error("closed while connecting");
      this.#o.logger.info(
        { session_id: hello.session_id, attempt: this.#backoff.attempt },
        "socket connected",
      );
      this.#peer = connection.peer;
      this.#o.connected(connection.peer);
      return connection;
    } catch (err) {
      connection?.destroy();
      this.#current = null;
      if (err instanceof RpcError && err.code === RpcErrorCode.Unauthenticated) {
        this.#rejected = true;
        this.#o.logger.error("the host-agent rejected the session token");
        this.#o.rejected?.(err.message);
        return null;
      }
      const reason = err instanceof Error ? err.message : String(err);
      this.#o.logger.debug(
        { path: this.#o.socketPath, attempt: this.#backoff.attempt, reason },
        "socket connect failed",
      );
      // Wait for the close so the loop does not overlap two connections.
      if (connection) await connection.closed;
      return null;
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}

export function openSocket(path: string, timeoutMs: number): Promise<Socket> {
  // A host path (the process runtime) may be too long for the kernel's socket names.
  return withSocketPath(path, (usable) => connectTo(usable, path, timeoutMs));
}

function connectTo(usable: string, path: string, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(usable);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connecting to ${path} timed out`));
    }, timeoutMs);
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
  });
}
