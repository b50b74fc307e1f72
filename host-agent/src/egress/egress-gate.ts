/**
 * The host's egress gate: one per host-agent, serving an egress socket in each project
 * container's socket directory (`runner/egress.sock`, which only the runner may reach). Each
 * connection starts with the runner's hello (protocol/egress.ts: the container's secret and who,
 * by uid, made the connection), which the gate answers before the client's first byte passes;
 * the rest is the client's HTTP proxy conversation, which the project's EgressProxy decides.
 * A container keeps no network of its own: this is the only way out besides the model and git.
 */
import { timingSafeEqual } from "node:crypto";
import { chmod, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import type { Logger } from "../../../lib/log.js";
import { withSocketPath } from "../../../lib/unix-path.js";
import {
  type EgressAck,
  EgressHelloSchema,
  type EgressPeer,
  MAX_EGRESS_HELLO_BYTES,
} from "../../../protocol/egress.js";
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
    await rm(path, { force: true });
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
    // Its directory decides who reaches it (the runner's, root's alone, where the host can say so).
    await chmod(path, 0o666);
    return () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        proxy.close();
        for (const socket of open) socket.destroy();
      });
  }
}

/**
 * Reads the runner's hello line and answers it; resolves with the peer once the connection is
 * the client's, or null when it was refused (the socket is then ended). No client byte may come
 * before the answer: any does, and the connection is refused.
 */
function readHello(socket: Socket, runnerToken: string): Promise<EgressPeer | null> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => finish(null, "no hello in time"), HELLO_TIMEOUT_MS);
    timer.unref();
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline === -1) {
        if (buffered.length > MAX_EGRESS_HELLO_BYTES) finish(null, "the hello is too long");
        return;
      }
      if (newline !== buffered.length - 1) return finish(null, "bytes came before the hello was answered");
      const parsed = parseJson(buffered.subarray(0, newline).toString("utf8"));
      const hello = EgressHelloSchema.safeParse(parsed.ok ? parsed.value : undefined);
      if (!hello.success) return finish(null, "the hello is not an egress hello");
      if (!sameSecret(hello.data.runner_token, runnerToken))
        return finish(null, "the runner's secret is wrong");
      finish(hello.data.peer, null);
    };
    const finish = (peer: EgressPeer | null, error: string | null) => {
      clearTimeout(timer);
      socket.off("data", onData);
      // No byte can come before the answer below (the runner waits for it), and the proxy's
      // parser takes the socket in the microtask that follows: nothing is read in between.
      const ack: EgressAck = error === null ? { ok: true } : { ok: false, error };
      if (error !== null) {
        socket.end(`${JSON.stringify(ack)}\n`);
        resolve(null);
        return;
      }
      socket.write(`${JSON.stringify(ack)}\n`);
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
export const tcpDial: Dialer = (address, port, timeoutMs) =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, noDelay: true });
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
