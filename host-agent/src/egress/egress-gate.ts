/**
 * The host's egress gate: one per host-agent, serving an egress socket in each project
 * container's socket directory (`runner/egress.sock`, which only the runner may reach). Each
 * connection starts with the runner's hello (protocol/egress.ts: the container's secret and who,
 * by uid, made the connection); the rest is the client's HTTP proxy conversation, which the
 * project's EgressProxy decides.
 * A container keeps no network of its own: this is the only way out besides the model and git.
 */
import { timingSafeEqual } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import { listenOnSocket } from "../../../lib/listen.js";
import type { Logger } from "../../../lib/log.js";
import { EgressHelloSchema, type EgressPeer, MAX_EGRESS_HELLO_BYTES } from "../../../protocol/egress.js";
import { parseJson } from "../../../protocol/json.js";
import type { AddressPolicy } from "./address-check.js";
import { type Dialer, EgressProxy } from "./egress-proxy.js";
import type { ProjectNetwork } from "./project-network.js";

export interface EgressGateOptions {
  addresses: AddressPolicy;
  logger: Logger;
  /** How a checked address is connected to (default: TCP). */
  dial?: Dialer;
  /** A connection idle this long is closed; default 2 minutes. */
  idleMs?: number;
  connectTimeoutMs?: number;
}

/** How long the runner has to say its hello. */
const HELLO_TIMEOUT_MS = 5_000;

export class EgressGate {
  readonly #o: EgressGateOptions;
  readonly #log: Logger;
  readonly #dial: Dialer;

  constructor(options: EgressGateOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: "egress" });
    this.#dial = options.dial ?? tcpDial;
  }

  /** Serves one project container's egress socket at `path`; resolves with a close function. */
  async listen(path: string, project: ProjectNetwork, runnerToken: string): Promise<() => Promise<void>> {
    const log = this.#log.child({ project: project.projectId });
    const proxy = new EgressProxy({
      project,
      addresses: this.#o.addresses,
      dial: this.#dial,
      logger: log,
      idleMs: this.#o.idleMs ?? 120_000,
      connectTimeoutMs: this.#o.connectTimeoutMs ?? 10_000,
    });
    const open = new Set<Socket>();
    const server: Server = createServer({ allowHalfOpen: false }, (socket) => {
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      socket.on("error", () => {});
      readHello(socket, runnerToken).then(
        (peer) => {
          if (peer === null) return;
          proxy.serve(socket, peer);
        },
        (err: unknown) => {
          log.warn({ err: err instanceof Error ? err.message : String(err) }, "bad egress hello");
          socket.destroy();
        },
      );
    });
    // Its directory decides who reaches it (the runner's, root's alone, where the host can say so).
    await listenOnSocket(server, path);
    return () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        proxy.close();
        for (const socket of open) socket.destroy();
      });
  }
}

/**
 * Reads the runner's hello line; resolves with the peer and the client's bytes that came with it
 * (given back to the socket), or null when the hello was refused (the client is told why in an
 * HTTP 502, and the connection ends).
 */
function readHello(socket: Socket, runnerToken: string): Promise<EgressPeer | null> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => finish(null, null, "no hello in time"), HELLO_TIMEOUT_MS);
    timer.unref();
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline === -1) {
        if (buffered.length > MAX_EGRESS_HELLO_BYTES) finish(null, null, "the hello is too long");
        return;
      }
      const rest = buffered.subarray(newline + 1);
      const parsed = parseJson(buffered.subarray(0, newline).toString("utf8"));
      const hello = EgressHelloSchema.safeParse(parsed.ok ? parsed.value : undefined);
      if (!hello.success) return finish(null, null, "the hello is not an egress hello");
      if (!sameSecret(hello.data.runner_token, runnerToken))
        return finish(null, null, "the runner's secret is wrong");
      finish(hello.data.peer, rest, null);
    };
    const finish = (peer: EgressPeer | null, rest: Buffer | null, error: string | null) => {
      clearTimeout(timer);
      socket.off("data", onData);
      if (error !== null || peer === null) {
        const body = `the egress gate refused this container's proxy: ${error}\n`;
        socket.end(
          `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        resolve(null);
        return;
      }
      // The client's first bytes came with the hello: they are read again by the proxy's parser,
      // which takes the socket in the microtask that follows (no read happens in between).
      socket.pause();
      if (rest !== null && rest.length > 0) socket.unshift(rest);
      resolve(peer);
    };
    socket.on("data", onData);
  });
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Connects over TCP to the checked address (no name: nothing is looked up again). */
export const tcpDial: Dialer = (address, port, timeoutMs, onread) =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, noDelay: true, ...(onread ? { onread } : {}) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
