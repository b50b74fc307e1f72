/**
 * The model proxy: what an agent's model requests reach, through the runner's forwarder and the
 * model socket in the project's socket directory. For each request it
 * - finds the session by the placeholder credential the agent presents (never a provider key);
 * - allows only the providers' API paths (anything else: 403, said plainly);
 * - refuses once the session's budget is spent (403, with the reason, reported to the session);
 * - forwards to the provider's upstream with the host's key in place of the placeholder, streaming
 *   the answer back untouched while it reads the usage, which it then meters.
 * One proxy serves every project of the host; each project's container gets its own socket.
 */
import type { IncomingMessage, RequestOptions, Server, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { listenOnSocket } from "../../../lib/listen.js";
import type { Logger } from "../../../lib/log.js";
import { http } from "../../../lib/node-http.js";
import type { ModelProvider } from "../../../protocol/agent-runtimes.js";
import type { ModelKeys } from "./model-keys.js";
import { costOf } from "./prices.js";
import { CREDENTIAL_HEADERS, PROVIDERS, providerFor } from "./providers.js";
import type { SessionMeter } from "./session-meter.js";
import { UsageReader } from "./usage-reader.js";

/** Headers that belong to one hop and are not forwarded. */
const HOP_HEADERS = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "accept-encoding",
  ...CREDENTIAL_HEADERS,
]);
/** Largest request body forwarded (a long conversation with images stays well below). */
const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** How long an upstream may stay silent (a model thinking before its first byte included). */
const UPSTREAM_IDLE_MS = 10 * 60_000;

export interface ModelProxyOptions {
  keys: ModelKeys;
  logger: Logger;
}

export class ModelProxy {
  readonly #o: ModelProxyOptions;
  readonly #log: Logger;
  readonly #sessions = new Map<string, SessionMeter>();

  constructor(options: ModelProxyOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: "model-proxy" });
  }

  /** Requests presenting `token` are the session's (its agent got it as its model key). */
  register(token: string, meter: SessionMeter): void {
    this.#sessions.set(token, meter);
  }

  unregister(token: string): void {
    this.#sessions.delete(token);
  }

  /** Serves the model socket of one project container at `path`; resolves with a close function. */
  async listen(path: string): Promise<() => Promise<void>> {
    const server = http.createServer((req, res) => {
      // Whatever a container sends (a request line no URL parser takes, say), the host-agent stays up.
      this.#handle(req, res).catch((err: unknown) => {
        this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, "bad model request");
        if (!res.headersSent) answerError(res, 400, "Oubliette's model proxy could not read this request");
        else res.destroy();
      });
    });
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    // Its directory decides who reaches it (the runner's, root's alone, where the host can say so).
    await listenOnSocket(server, path);
    return () => closeServer(server);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A refused request's body is read (and dropped) first, so its sender sees the answer rather
    // than a broken pipe; one that keeps sending past the cap is cut off.
    const refuse = (status: number, message: string) => {
      let bytes = 0;
      req.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_REQUEST_BYTES) req.destroy();
      });
      req.once("end", () => answerError(res, status, message));
      req.resume();
    };
    const url = new URL(req.url ?? "/", "http://model.invalid");
    const path = url.pathname;
    const meter = this.#session(req, url);
    if (!meter) return refuse(401, "this request does not carry a session's model credential");
    const log = this.#log.child({ session: meter.sessionId });
    const provider = providerFor(path);
    if (provider === null || (req.method !== "POST" && !(req.method === "GET" && path === "/v1/models"))) {
      log.warn({ method: req.method, path }, "refused a model request outside the allowlist");
      return refuse(403, `Oubliette's model proxy does not allow ${req.method} ${path}`);
    }
    const endpoint = this.#o.keys[provider];
    if (endpoint.apiKey === null) {
      return refuse(403, `this host has no ${provider} key; configure one on the host-agent`);
    }
    const refusal = meter.refusal();
    if (refusal !== null) {
      log.info({ path }, "refused a model request: budget spent");
      meter.refused(refusal);
      return refuse(403, refusal);
    }
    // The placeholder rides in the query for Gemini's `?key=`; it never goes upstream.
    url.searchParams.delete("key");
    const target = new URL(`${endpoint.baseUrl}${path}${url.search}`);
    this.#forward(req, res, { provider, path, target, key: endpoint.apiKey, meter, log });
  }

  /** The session whose placeholder the request carries, wherever the CLI puts its key. */
  #session(req: IncomingMessage, url: URL): SessionMeter | undefined {
    const candidates = [
      req.headers["x-api-key"],
      req.headers["x-goog-api-key"],
      req.headers.authorization?.replace(/^Bearer\s+/i, ""),
      url.searchParams.get("key") ?? undefined,
    ];
    for (const candidate of candidates) {
      const value = Array.isArray(candidate) ? candidate[0] : candidate;
      const meter = value === undefined ? undefined : this.#sessions.get(value);
      if (meter) return meter;
    }
    return undefined;
  }

  #forward(
    req: IncomingMessage,
    res: ServerResponse,
    f: { provider: ModelProvider; path: string; target: URL; key: string; meter: SessionMeter; log: Logger },
  ): void {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) headers[name] = value;
    }
    // Plain bytes back, so the usage can be read as they pass.
    headers["accept-encoding"] = "identity";
    Object.assign(headers, PROVIDERS[f.provider].keyHeaders(f.key));
    const options: RequestOptions = { method: req.method, headers, timeout: UPSTREAM_IDLE_MS };
    const send = f.target.protocol === "https:" ? httpsRequest : http.request;
    const upstream = send(f.target, options, (answer) => {
      const reader = new UsageReader(
        PROVIDERS[f.provider].usageFormat(f.path),
        String(answer.headers["content-type"] ?? ""),
      );
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !HOP_HEADERS.has(name)) out[name] = value;
      }
      res.writeHead(answer.statusCode ?? 502, out);
      answer.on("data", (chunk: Buffer) => reader.push(chunk));
      answer.pipe(res);
      answer.on("end", () => {
        const usage = reader.finish();
        if (!usage) return;
        const cost = costOf(f.provider, usage.model, usage.inputTokens, usage.outputTokens);
        f.meter.add(usage.inputTokens, usage.outputTokens, cost);
        f.log.debug(
          {
            path: f.path,
            status: answer.statusCode,
            input: usage.inputTokens,
            output: usage.outputTokens,
            cost,
          },
          "model request metered",
        );
      });
      answer.on("error", () => res.destroy());
    });
    upstream.on("timeout", () => upstream.destroy(new Error("the model upstream went silent")));
    upstream.on("error", (err) => {
      f.log.warn({ path: f.path, err: err.message }, "model upstream failed");
      if (!res.headersSent) answerError(res, 502, `the ${f.provider} upstream failed: ${err.message}`);
      else res.destroy();
    });
    // The agent gave up (an interrupt, say): so does the upstream request.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_REQUEST_BYTES) {
        upstream.destroy();
        answerError(res, 413, `a model request may be at most ${MAX_REQUEST_BYTES} bytes`);
        req.destroy();
      }
    });
    req.pipe(upstream);
  }
}

/** An error in a shape every CLI shows: JSON with `error.message` (and `type`, as Anthropic's). */
function answerError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({
    type: "error",
    error: { type: status === 403 ? "permission_error" : "oubliette_proxy_error", message, code: status },
  });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
