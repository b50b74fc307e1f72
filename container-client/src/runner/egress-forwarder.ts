/**
 * The container's HTTP proxy: a loopback port every agent and command is pointed at
 * (HTTP_PROXY, HTTPS_PROXY and the rest, protocol/egress.ts). The container has no network; each
 * connection here is carried over the egress socket to the host-agent's gate, which decides it
 * and answers the client itself. This side only says who made the connection — the uid the
 * kernel names for the client's socket, mapped to its session — and then passes bytes untouched,
 * holding the client's first bytes until the gate has taken the hello.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { Logger } from "../../../lib/log.js";
import { EgressAckSchema, type EgressHello, type EgressPeer } from "../../../protocol/egress.js";
import { parseJson } from "../../../protocol/json.js";
import { socketOwner } from "./socket-owner.js";

/** Most proxy connections at once; more are refused (the gate bounds each project as well). */
const MAX_CONNECTIONS = 512;
/** How long the gate has to answer a hello. */
const ACK_TIMEOUT_MS = 10_000;

export interface EgressForwarderOptions {
  /** The host's egress socket (`runner/egress.sock` beside the runner's relay socket). */
  socketPath: string;
  runnerToken: string;
  /** Who a uid is (a session's agent, the exec identity); null: the kernel named no uid. */
  peerOf(uid: number | null): EgressPeer;
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
      forwarder.#carry(client).catch((err: unknown) => {
        options.logger.debug(
          { err: err instanceof Error ? err.message : String(err) },
          "egress connection ended",
        );
        client.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    const address = server.address();
    forwarder.#port = typeof address === "object" && address !== null ? address.port : 0;
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

  async #carry(client: Socket): Promise<void> {
    this.#open.add(client);
    client.once("close", () => this.#open.delete(client));
    client.on("error", () => {});
    const uid = client.remotePort === undefined ? null : await socketOwner(client.remotePort, this.#port);
    const hello: EgressHello = { v: 1, runner_token: this.#o.runnerToken, peer: this.#o.peerOf(uid) };
    const upstream = connect(this.#o.socketPath);
    upstream.on("error", () => client.destroy());
    client.once("close", () => upstream.destroy());
    upstream.write(`${JSON.stringify(hello)}\n`);
    const ack = await readAck(upstream);
    if (!ack.ok) {
      this.#o.logger.warn({ error: ack.error }, "the gate refused the runner's hello");
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nthe egress gate refused this container: ${ack.error}\n`,
      );
      upstream.destroy();
      return;
    }
    upstream.once("close", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  }
}

/** The gate's one-line answer to the hello (nothing else comes before it). */
function readAck(upstream: Socket): Promise<{ ok: true } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    let buffered = "";
    const timer = setTimeout(
      () => done({ ok: false, error: "the gate did not answer in time" }),
      ACK_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const newline = buffered.indexOf("\n");
      if (newline === -1) {
        if (buffered.length > 2048) done({ ok: false, error: "the gate's answer is too long" });
        return;
      }
      const parsed = parseJson(buffered.slice(0, newline));
      const ack = EgressAckSchema.safeParse(parsed.ok ? parsed.value : undefined);
      done(ack.success ? ack.data : { ok: false, error: "the gate's answer is not an egress answer" });
    };
    const onClose = () => done({ ok: false, error: "the gate closed the connection" });
    function done(result: { ok: true } | { ok: false; error: string }) {
      clearTimeout(timer);
      upstream.off("data", onData);
      upstream.off("close", onClose);
      resolve(result);
    }
    upstream.on("data", onData);
    upstream.once("close", onClose);
  });
}
