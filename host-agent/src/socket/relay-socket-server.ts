/**
 * The host side of one session's container socket: a Unix socket the droid's container-client
 * connects to. Authenticates connections with the session token, relays `caller_tool` requests
 * to the host-agent and pushes the caller's tool declarations.
 */
import { lstat, mkdir, chmod as setMode, unlink } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { DEFAULT_MAX_LINE_BYTES } from "../../../protocol/socket.js";
import { RelayConnection, type RelayConnectionContext } from "./relay-connection.js";
import { sessionTokenMatches } from "./session-token.js";
import type { RelaySocketServerOptions } from "./types.js";

/** Used as the call deadline until the first config arrives. */
const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/** `setCallerToolsConfig` was given a config whose notification would exceed the line limit. */
export class ConfigTooLargeError extends Error {
  override readonly name = "ConfigTooLargeError";
  readonly code = "config_too_large";
}

async function removeStaleSocket(path: string): Promise<void> {
  const stat = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  if (stat === undefined) return;
  if (!stat.isSocket()) throw new Error(`refusing to replace ${path}: it exists and is not a socket`);
  await unlink(path);
}

export class RelaySocketServer {
  readonly #options: RelaySocketServerOptions;
  readonly #log: Logger;
  readonly #connections = new Set<RelayConnection>();
  readonly #ctx: RelayConnectionContext;
  #server: Server | undefined;
  #configLine: string | undefined;
  #callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS;
  #nextConnectionId = 1;
  #closing: Promise<void> | undefined;

  constructor(options: RelaySocketServerOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: "relay-socket", session_id: options.sessionId });
    const callGraceMs = options.callGraceMs ?? 2_000;
    this.#ctx = {
      sessionId: options.sessionId,
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      helloTimeoutMs: options.helloTimeoutMs ?? 10_000,
      maxInFlight: options.maxInFlightPerConnection ?? 1024,
      closeGraceMs: 2_000,
      logger: this.#log,
      callerTool: (call, signal) => options.handlers.callerTool(call, signal),
      tokenMatches: (presented) => sessionTokenMatches(presented, options.sessionToken),
      configLine: () => this.#configLine,
      callDeadlineMs: () => this.#callTimeoutMs + callGraceMs,
      onClosed: (connection) => this.#connections.delete(connection),
    };
  }

  /** Open connections, authenticated or not. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Connections that have completed `hello`. */
  get authenticatedCount(): number {
    let n = 0;
    for (const c of this.#connections) if (c.authenticated) n += 1;
    return n;
  }

  /** Listens on the socket path (replacing a stale socket file) with mode 0o666. */
  async start(): Promise<void> {
    if (this.#server) throw new Error("RelaySocketServer already started");
    const { path } = this.#options;
    await mkdir(dirname(path), { recursive: true });
    await removeStaleSocket(path);
    const server = createServer((socket) => this.#accept(socket));
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => this.#log.error({ err }, "relay socket server error"));
    // The container user (uid 1000) is not the host-agent's user.
    await setMode(path, 0o666);
    this.#log.info({ path }, "relay socket listening");
  }

  /**
   * Stores the config and pushes `caller_tools_config` to every authenticated connection (and to
   * each new one right after its hello). Throws ConfigTooLargeError if it cannot fit on one line.
   */
  setCallerToolsConfig(config: CallerToolsConfig): void {
    const line = JSON.stringify({ jsonrpc: "2.0", method: "caller_tools_config", params: config });
    const bytes = Buffer.byteLength(line);
    if (bytes > this.#ctx.maxLineBytes) {
      throw new ConfigTooLargeError(
        `caller_tools_config is ${bytes} bytes; the socket line limit is ${this.#ctx.maxLineBytes}`,
      );
    }
    this.#configLine = line;
    this.#callTimeoutMs = config.timeout_ms;
    for (const connection of this.#connections) connection.pushIfAuthenticated(line);
    this.#log.info({ caller_id: config.caller_id, tools: config.tools.length }, "caller tools config pushed");
  }

  /**
   * Stops listening, answers every request in flight with a `session_ended` error, ends the
   * connections and removes the socket file. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const server = this.#server;
    const stopped = new Promise<void>((resolve) => {
      if (!server?.listening) resolve();
      else server.close(() => resolve());
    });
    await Promise.all(
      [...this.#connections].map((c) => c.shutdown("the host-agent closed the session's relay socket")),
    );
    await stopped;
    await unlink(this.#options.path).catch(() => undefined);
    this.#log.info("relay socket closed");
  }

  #accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    const connection = new RelayConnection(socket, this.#ctx, this.#nextConnectionId++);
    this.#connections.add(connection);
  }
}
