/**
 * The container's HTTP proxy: a loopback port every agent and command is pointed at
 * (HTTP_PROXY, HTTPS_PROXY and the rest, protocol/egress.ts). The container has no network; each
 * connection here is carried over the egress socket to the host-agent's gate, which decides it
 * and answers the client itself. This side only says who made the connection — the uid the
 * kernel names for the client's socket, mapped to its session — in a first line, and then
 * passes the client's bytes untouched.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { listenOnLoopback } from "../../../lib/listen.js";
import type { Logger } from "../../../lib/log.js";
import { type RelayTarget, relayEnd, relayOnRead } from "../../../lib/relay-reads.js";
import type { EgressHello, EgressPeer } from "../../../protocol/egress.js";
import { socketOwner } from "./socket-owner.js";

/** Most proxy connections at once; more are refused (the gate bounds each project as well). */
const MAX_CONNECTIONS = 512;

export interface EgressForwarderOptions {
  /** The host's egress socket (`runner/egress.sock` beside the runner's relay socket). */
  socketPath: string;
  runnerToken: string;
  /** Who a uid is (a session's agent, the exec identity); null: the kernel named no uid. */
  peerOf(uid: number | null): EgressPeer;
  /**
   * Whether a connection's uid is looked up (a container, where each session is a uid of its
   * own); without, every peer is `peerOf(null)` and the proxy credential alone says who.
   */
  byUid: boolean;
  logger: Logger;
}

export class EgressForwarder {
  readonly #server: Server;
  readonly #o: EgressForwarderOptions;
  readonly #open = new Set<Socket>();
  #port = 0;

  private constructor(server: Server, options: EgressForwarderOptions) {
    this.#server = server;
    this.#o = options;
  }

  /** Listens on 127.0.0.1 (a free port). */
  static async start(options: EgressForwarderOptions): Promise<EgressForwarder> {
    const server = createServer({ noDelay: true, pauseOnConnect: true });
    server.maxConnections = MAX_CONNECTIONS;
    const forwarder = new EgressForwarder(server, options);
    server.on("connection", (client) => {
      try {
        forwarder.#carry(client);
      } catch (err) {
        options.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "egress connection failed",
        );
        client.destroy();
      }
    });
    forwarder.#port = await listenOnLoopback(server);
    options.logger.info({ port: forwarder.#port, socket: options.socketPath }, "egress proxy listening");
    return forwarder;
  }

  get port(): number {
    return this.#port;
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#open) socket.destroy();
    return closed;
  }

  #carry(client: Socket): void {
    this.#open.add(client);
    client.once("close", () => this.#open.delete(client));
    client.on("error", () => {});
    // The gate's socket is opened while the kernel is asked who the client is.
    // What the gate sends comes back to the client in big reads, not through pipe().
    const downstream: RelayTarget = { to: client, from: null };
    const upstream = connect({ path: this.#o.socketPath, onread: relayOnRead(downstream) });
    downstream.from = upstream;
    relayEnd(upstream, client);
    upstream.on("error", () => client.destroy());
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
    const uid =
      this.#o.byUid && client.remotePort !== undefined ? socketOwner(client.remotePort, this.#port) : null;
    const hello: EgressHello = { v: 1, runner_token: this.#o.runnerToken, peer: this.#o.peerOf(uid) };
    // The hello, then the client's bytes at once: the gate answers whatever it refuses itself.
    upstream.write(`${JSON.stringify(hello)}\n`);
    client.pipe(upstream);
    client.resume();
  }
}
