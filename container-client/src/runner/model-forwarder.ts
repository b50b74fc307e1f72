/**
 * The model forwarder: the container has no network, so an agent's model API is a loopback port
 * inside it, piped byte for byte to the model socket the host-agent serves in the socket directory.
 * The host-agent's proxy adds the provider key and forwards to the allowlisted upstream; nothing
 * here reads or changes the traffic. It starts before any agent (CLIs call their model early).
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { listenOnLoopback } from "../../../lib/listen.js";
import type { Logger } from "../../../lib/log.js";

/** Most connections at once; more are refused (an agent opens a handful). */
const MAX_CONNECTIONS = 256;

export class ModelForwarder {
  readonly #server: Server;
  readonly #log: Logger;
  readonly #open = new Set<Socket>();
  #port = 0;

  private constructor(server: Server, log: Logger) {
    this.#server = server;
    this.#log = log;
  }

  /** Listens on 127.0.0.1 (a free port) and pipes each connection to `socketPath`. */
  static async start(socketPath: string, log: Logger): Promise<ModelForwarder> {
    const server = createServer({ noDelay: true });
    server.maxConnections = MAX_CONNECTIONS;
    const forwarder = new ModelForwarder(server, log);
    server.on("connection", (client) => forwarder.#pipe(client, socketPath));
    forwarder.#port = await listenOnLoopback(server);
    log.info({ port: forwarder.#port, socket: socketPath }, "model forwarder listening");
    return forwarder;
  }

  /** The base URL agents use for their model API. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Stops listening and cuts the connections still open (an agent's idle keep-alive ones). */
  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#open) socket.destroy();
    return closed;
  }

  #pipe(client: Socket, socketPath: string): void {
    const upstream = connect(socketPath);
    this.#open.add(client);
    client.once("close", () => this.#open.delete(client));
    const end = (err?: Error) => {
      if (err) this.#log.debug({ err: err.message }, "model connection ended");
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    // The agent gave up on the request: so does the proxy. (An upstream end reaches the client
    // through pipe(), after what was written before it.)
    client.on("close", () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
