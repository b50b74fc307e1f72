/**
 * The host side of one project container's socket: a Unix socket the runner and every session's
 * container-client connect to. Bounded per container: at most `maxConnections` at once (more
 * are closed on accept), and a connection that has not authenticated within `helloTimeoutMs` is
 * closed, so one container cannot exhaust the host-agent's file descriptors.
 */
import { lstat, mkdir, chmod as setMode, unlink } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { withSocketPath } from "../../../lib/unix-path.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { SocketMethods } from "../../../protocol/socket.js";
import { type ConnectionContext, ContainerConnection } from "./container-connection.js";
import type { ContainerHandlers, SocketAuth } from "./types.js";

export interface RelaySocketServerOptions {
  /** Unix socket path, e.g. `<socketDir>/relay.sock`; created with mode 0o666, a stale socket is removed first. */
  path: string;
  projectId: string;
  /** Which secrets the runner and each session's container-client present in `hello`. Never logged. */
  auth: SocketAuth;
  handlers: ContainerHandlers;
  logger: Logger;
  /** Most connections at once (authenticated or not); default 64. */
  maxConnections?: number;
  /** A connection that has not completed `hello` by then is closed; default 5 s. */
  helloTimeoutMs?: number;
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
  readonly #connections = new Set<ContainerConnection>();
  readonly #ctx: ConnectionContext;
  readonly #maxConnections: number;
  #server: Server | undefined;
  readonly #configs = new Map<string, CallerToolsConfig>();
  #nextConnectionId = 1;
  #refused = 0;
  #closing: Promise<void> | undefined;

  constructor(options: RelaySocketServerOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: "container-socket" });
    this.#maxConnections = options.maxConnections ?? 64;
    this.#ctx = {
      projectId: options.projectId,
      helloTimeoutMs: options.helloTimeoutMs ?? 5_000,
      logger: this.#log,
      handlers: options.handlers,
      auth: options.auth,
      config: (sessionId) => this.#configs.get(sessionId),
    };
  }

  /** Open connections, authenticated or not. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Listens on the socket path (replacing a stale socket file) with mode 0o666. */
  async start(): Promise<void> {
    if (this.#server) throw new Error("RelaySocketServer already started");
    const { path } = this.#options;
    await mkdir(dirname(path), { recursive: true });
    await removeStaleSocket(path);
    const server = createServer((socket) => this.#accept(socket));
    this.#server = server;
    await withSocketPath(
      path,
      (usable) =>
        new Promise<void>((resolve, reject) => {
          server.once("error", reject);
          server.listen(usable, () => {
            server.off("error", reject);
            resolve();
          });
        }),
    );
    // EMFILE and friends on accept are reported here; the server keeps listening.
    server.on("error", (err) => this.#log.error({ err: err.message }, "container socket server error"));
    // Who may connect is its directory's to say (a session's uid, the runner's root).
    await setMode(path, 0o666);
    this.#log.info({ path }, "container socket listening");
  }

  /** Stores a session's config and pushes `caller_tools_config` to its clients (and to each new one after its hello). */
  setCallerToolsConfig(sessionId: string, config: CallerToolsConfig): void {
    this.#configs.set(sessionId, config);
    for (const connection of this.#connections)
      connection.notifyClient(sessionId, SocketMethods.callerToolsConfig, config);
    this.#log.info(
      { session: sessionId, caller_id: config.caller_id, tools: config.tools.length },
      "caller tools config pushed",
    );
  }

  /** Tells a session's clients that the tools their key allows may have changed (they list them again). */
  oublietteToolsChanged(sessionId: string): void {
    for (const connection of this.#connections)
      connection.notifyClient(sessionId, SocketMethods.oublietteToolsChanged, {});
  }

  /** A session is over: forget its config and close its clients' connections (its secret is void now). */
  dropSession(sessionId: string): void {
    this.#configs.delete(sessionId);
    for (const connection of this.#connections)
      if (connection.sessionId === sessionId) void connection.shutdown(2_000);
  }

  /**
   * Stops listening, ends every connection (in-flight handlers see ConnectionClosed) and removes
   * the socket file. The runner and container-client reconnect to whoever listens there next.
   * Idempotent.
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
    await Promise.all([...this.#connections].map((c) => c.shutdown(2_000)));
    await stopped;
    await unlink(this.#options.path).catch(() => undefined);
    this.#log.info("container socket closed");
  }

  #accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    if (this.#connections.size >= this.#maxConnections) {
      socket.destroy();
      this.#refused += 1;
      // One line per hundred refusals: a flood must not flood the log too.
      if (this.#refused % 100 === 1) {
        this.#log.warn(
          { max: this.#maxConnections, refused: this.#refused },
          "too many container connections; refusing",
        );
      }
      return;
    }
    const connection = new ContainerConnection(socket, this.#ctx, this.#nextConnectionId++);
    this.#connections.add(connection);
    void connection.closed.then(() => this.#connections.delete(connection));
  }
}
