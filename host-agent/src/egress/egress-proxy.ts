/**
 * The gate's HTTP proxy for one project: the connections the runner hands over (egress-socket.ts)
 * are read by Node's own HTTP parser, and each request is decided before anything leaves:
 * - `CONNECT host:port` (HTTPS, or any TLS): the policy is on host and port; the tunnel's bytes
 *   pass untouched (no interception, no certificates of ours);
 * - a plain-HTTP request in absolute form (`GET http://host/path`): method and host are known;
 *   it is forwarded with the hop's own headers (and the proxy credential) removed.
 * A refusal is an HTTP answer that says why (403, with `X-Oubliette-Refusal: <code>`), reported
 * to the session (or, for a user's command, to the audit log). An allowed request goes to the one
 * address the gate checked (address-check.ts), never looked up again.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { OnReadOpts, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "../../../lib/log.js";
import { http } from "../../../lib/node-http.js";
import { type RelayTarget, relayEnd, relayOnRead } from "../../../lib/relay-reads.js";
import type { EgressPeer } from "../../../protocol/egress.js";
import type { NetworkTarget } from "../../../protocol/network.js";
import type { NetworkBlocked } from "../../../protocol/network-activity.js";
import { type AddressPolicy, checkDestination } from "./address-check.js";
import type { EgressPrincipal, ProjectNetwork } from "./project-network.js";

/**
 * Connects to a checked address (tests inject one that never leaves loopback); `onread`, when
 * given, takes the new socket's reads (see lib/relay-reads.ts).
 */
export type Dialer = (
  address: string,
  port: number,
  timeoutMs: number,
  onread?: OnReadOpts,
) => Promise<Socket>;

export interface EgressProxyOptions {
  project: ProjectNetwork;
  addresses: AddressPolicy;
  dial: Dialer;
  logger: Logger;
  /** A connection with no byte either way for this long is closed. */
  idleMs: number;
  /** How long connecting to a host may take. */
  connectTimeoutMs: number;
}

/** Headers of one hop, never forwarded (RFC 9110 7.6.1), and the proxy's own credential. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-authenticate",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

type Refusal = Omit<NetworkBlocked, "host" | "port" | "method"> & { status: number };

export class EgressProxy {
  readonly #o: EgressProxyOptions;
  readonly #server: Server;
  readonly #peers = new WeakMap<object, EgressPeer>();

  constructor(options: EgressProxyOptions) {
    this.#o = options;
    this.#server = http.createServer();
    this.#server.headersTimeout = 30_000;
    this.#server.requestTimeout = 0;
    this.#server.keepAliveTimeout = 5_000;
    this.#server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      this.#forward(req, res).catch((err: unknown) => this.#failed(res, err));
    });
    this.#server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.#tunnel(req, socket as Socket, head).catch((err: unknown) => {
        this.#o.logger.warn({ err: message(err) }, "egress tunnel failed");
        socket.destroy();
      });
    });
    this.#server.on("upgrade", (_req: IncomingMessage, socket: Duplex) => {
      rawAnswer(
        socket as Socket,
        501,
        "the gate does not pass protocol upgrades over plain HTTP; use CONNECT",
      );
    });
    this.#server.on("clientError", (_err: Error, socket: Duplex) => {
      rawAnswer(socket as Socket, 400, "the gate could not read this request");
    });
  }

  /** Takes over a connection the runner handed over for `peer`. */
  serve(socket: Socket, peer: EgressPeer): void {
    this.#peers.set(socket, peer);
    this.#server.emit("connection", socket);
    // Paused with the client's first bytes given back (egress-gate.ts): they flow to the parser now.
    socket.resume();
  }

  /** Closes the connections still open. */
  close(): void {
    this.#server.closeAllConnections();
  }

  async #tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on("error", () => {});
    const target = parseAuthority(req.url ?? "");
    if (target === null) return rawAnswer(client, 400, "CONNECT names host:port");
    const decided = await this.#decide(req, client, { ...target, method: "CONNECT" });
    if (!decided.ok)
      return rawAnswer(client, decided.refusal.status, decided.refusal.reason, decided.refusal.code);
    const { principal, address } = decided;
    // What the host sends goes to the client in big reads, not through pipe().
    const downstream: RelayTarget = { to: client, from: null };
    let upstream: Socket;
    try {
      upstream = await this.#o.dial(address, target.port, this.#o.connectTimeoutMs, relayOnRead(downstream));
      downstream.from = upstream;
    } catch (err) {
      this.#o.project.release();
      return rawAnswer(client, 502, `could not connect to ${target.host}:${target.port}: ${message(err)}`);
    }
    if (client.destroyed) {
      upstream.destroy();
      this.#o.project.release();
      return;
    }
    const meter = this.#o.project.meter(principal);
    meter.connected(target.host, target.port);
    // Counted from the sockets' own totals (once a second and at the end), not per chunk: the
    // bytes pass untouched (pipe() one way, big reads the other).
    const counted = countSocket(upstream, meter.counter(target.host, target.port));
    let released = false;
    const end = () => {
      if (released) return;
      released = true;
      counted.stop();
      this.#o.project.release();
      client.destroy();
      upstream.destroy();
    };
    upstream.on("error", end);
    client.on("error", end);
    upstream.on("close", end);
    client.on("close", end);
    upstream.setTimeout(this.#o.idleMs, end);
    client.setTimeout(this.#o.idleMs, end);
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    relayEnd(upstream, client);
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? "";
    if (!/^http:\/\//i.test(raw)) {
      const why = /^https:\/\//i.test(raw)
        ? "send https:// through CONNECT (the gate does not open TLS)"
        : "this is Oubliette's egress proxy: ask it for an absolute http:// URL";
      return jsonAnswer(req, res, 400, why);
    }
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return jsonAnswer(req, res, 400, "the request's URL is not a URL");
    }
    const port = url.port === "" ? 80 : Number(url.port);
    const target: NetworkTarget = { host: url.hostname, port, method: req.method ?? "GET" };
    const decided = await this.#decide(req, req.socket, target);
    if (!decided.ok)
      return jsonAnswer(req, res, decided.refusal.status, decided.refusal.reason, decided.refusal.code);
    const { principal, address } = decided;
    const meter = this.#o.project.meter(principal);
    meter.connected(target.host, target.port);
    const counter = meter.counter(target.host, target.port);
    const headers: Record<string, string | string[]> = {};
    const dropped = connectionTokens(req.headers.connection);
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name) && !dropped.has(name)) headers[name] = value;
    }
    headers.host = url.host;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#o.project.release();
    };
    const upstream = http.request(
      {
        host: address,
        port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        agent: false,
        timeout: this.#o.idleMs,
      },
      (answer) => {
        const out: Record<string, string | string[]> = {};
        const droppedOut = connectionTokens(answer.headers.connection);
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_HEADERS.has(name) && !droppedOut.has(name)) out[name] = value;
        }
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, out);
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("socket", (socket: Socket) => {
      socket.once("close", () => {
        counter.add(socket.bytesWritten, socket.bytesRead);
        release();
      });
    });
    upstream.on("timeout", () => upstream.destroy(new Error(`${target.host}:${port} went silent`)));
    upstream.on("error", (err) => {
      release();
      if (!res.headersSent)
        jsonAnswer(req, res, 502, `could not reach ${target.host}:${port}: ${err.message}`);
      else res.destroy();
    });
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  /** Who asks and what the policies and the address rules say; a slot is taken when allowed. */
  async #decide(
    req: IncomingMessage,
    client: Socket,
    target: NetworkTarget,
  ): Promise<{ ok: true; principal: EgressPrincipal; address: string } | { ok: false; refusal: Refusal }> {
    const peer = this.#peers.get(client) ?? { kind: "unknown", uid: null };
    const who = this.#o.project.principal(peer, credentialOf(req.headers["proxy-authorization"]));
    if (!who.ok) return { ok: false, refusal: { status: 403, code: "credential", reason: who.reason } };
    const principal = who.principal;
    const refuse = (refusal: Refusal) => {
      this.#o.logger.info(
        {
          host: target.host,
          port: target.port,
          method: target.method,
          code: refusal.code,
          principal: principal.kind,
        },
        "egress refused",
      );
      const { status: _, ...blocked } = refusal;
      this.#o.project.reportBlocked(principal, {
        host: target.host,
        port: target.port,
        method: target.method.toUpperCase(),
        ...blocked,
      });
      return { ok: false as const, refusal };
    };
    const aborted = new AbortController();
    const onClose = () => aborted.abort(new Error("the client went away"));
    client.once("close", onClose);
    try {
      const decision = await this.#o.project.decide(principal, target, aborted.signal);
      if (!decision.allowed) return refuse({ status: 403, ...decision.blocked });
      const destination = await checkDestination(target.host, this.#o.addresses);
      if (!destination.ok) return refuse({ status: 403, code: "address", reason: destination.reason });
      if (!this.#o.project.acquire())
        return refuse({
          status: 503,
          code: "limit",
          reason: `the project has ${this.#o.project.openConnections} connections open through the gate, its most`,
        });
      return { ok: true, principal, address: destination.address };
    } finally {
      client.off("close", onClose);
    }
  }

  #failed(res: ServerResponse, err: unknown): void {
    this.#o.logger.warn({ err: message(err) }, "egress request failed");
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "the gate failed on this request" }));
    } else res.destroy();
  }
}

/** Adds what passed on `socket` to `counter` once a second and when stopped (out: written to the host). */
function countSocket(socket: Socket, counter: { add(out: number, inbound: number): void }): { stop(): void } {
  let out = 0;
  let inbound = 0;
  const sample = () => {
    counter.add(socket.bytesWritten - out, socket.bytesRead - inbound);
    out = socket.bytesWritten;
    inbound = socket.bytesRead;
  };
  const timer = setInterval(sample, 1_000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
    },
  };
}

/** `host:port` of a CONNECT (IPv6 in brackets); null when it is not one. */
export function parseAuthority(authority: string): { host: string; port: number } | null {
  const match =
    /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(authority) ?? /^([^:[\]\s/]+):(\d{1,5})$/.exec(authority);
  if (!match) return null;
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return null;
  return { host: match[1] as string, port };
}

/** The password of a Basic proxy credential (its user is not checked), or null. */
export function credentialOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return "";
  const decoded = Buffer.from(match[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon === -1 ? decoded : decoded.slice(colon + 1);
}

function connectionTokens(header: string | string[] | undefined): Set<string> {
  const value = Array.isArray(header) ? header.join(",") : (header ?? "");
  return new Set(
    value
      .split(",")
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ""),
  );
}

/** A reason fit for a status line: printable ASCII, one line, short. */
function statusText(reason: string): string {
  return reason.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
}

/** An answer on a raw socket (a refused CONNECT), then the end of the connection. */
function rawAnswer(socket: Socket, status: number, reason: string, code?: string): void {
  if (socket.destroyed) return;
  const body = `${reason}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${statusText(`Oubliette gate: ${reason}`)}`,
    "Content-Type: text/plain; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(code !== undefined ? [`X-Oubliette-Refusal: ${code}`] : []),
    ...(status === 407 ? ['Proxy-Authenticate: Basic realm="oubliette"'] : []),
    "Connection: close",
    "",
    "",
  ];
  socket.end(lines.join("\r\n") + body);
}

/** A JSON refusal (`error` is what npm and most clients print) on a plain-HTTP request. */
function jsonAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  reason: string,
  code?: string,
): void {
  req.resume();
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({ error: `Oubliette gate: ${reason}` });
  res.writeHead(status, statusText(`Oubliette gate: ${reason}`), {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(code !== undefined ? { "x-oubliette-refusal": code } : {}),
  });
  res.end(body);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
