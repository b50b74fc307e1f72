/**
 * One side of a JSON-RPC 2.0 conversation over any transport that carries text messages (a
 * socket's lines, a WebSocket's frames). Requests go out with a deadline and a cancel path;
 * incoming requests and notifications are dispatched through a method table (the MCP SDK's
 * `setRequestHandler` is the model). Both take a method's descriptor (`protocol/rpc/method.ts`):
 * a handler gets params parsed by it, a request's caller its result parsed by it;
 * `notifications/cancelled` aborts the handler's signal. Nothing a peer sends can throw out of
 * `receive`.
 */
import { z } from "zod";
import { exceedsUtf8Bytes, MAX_JSON_DEPTH } from "../../protocol/json.js";
import { clip, RpcError, RpcErrorCode, summarizeIssues } from "../../protocol/rpc/errors.js";
import {
  Cancelled,
  encodeError,
  encodeNotification,
  encodeRequest,
  encodeResult,
  type Frame,
  type JsonRpcId,
  parseFrame,
} from "../../protocol/rpc/messages.js";
import {
  type NotificationMethod,
  type ParsedParams,
  type ParsedResult,
  parseParams,
  parseResult,
  type RequestMethod,
  type SentParams,
  type SentResult,
} from "../../protocol/rpc/method.js";
import type { Logger } from "../log.js";

export interface HandlerContext {
  readonly id: JsonRpcId;
  /** Aborted when the peer cancels the request or the connection closes; `reason` is an RpcError. */
  readonly signal: AbortSignal;
}

type RequestHandler = (params: unknown, ctx: HandlerContext) => unknown;
type NotificationHandler = (params: unknown) => void;

/** What serves request `M`: its parsed params in, its result (or a promise of it) out; throw an RpcError to refuse. */
export type Handler<M extends RequestMethod> = (
  params: ParsedParams<M>,
  ctx: HandlerContext,
) => SentResult<M> | Promise<SentResult<M>>;

export interface RpcPeerOptions {
  /** Hands one message to the transport; false when it could not be sent (connection gone). */
  send(text: string): boolean;
  maxMessageBytes: number;
  logger: Logger;
  /** Requests this side serves at once; more are refused. */
  maxInFlight?: number;
  /**
   * Checked before any handler runs: return an error to refuse the message (for example
   * "authenticate first"). Notifications refused this way are dropped.
   */
  gate?(method: string): RpcError | undefined;
  /**
   * Offered every message that is not JSON-RPC before it is refused; return true to take it
   * (e.g. an older wire form still accepted).
   */
  adopt?(raw: unknown): boolean;
}

export interface RequestOptions {
  /** Use this id (it must not be pending); default: the next number. */
  id?: JsonRpcId;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Message of the timeout error. */
  timeoutMessage?: string;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: RpcError): void;
}

export class RpcPeer {
  readonly #o: RpcPeerOptions;
  readonly #requestHandlers = new Map<string, RequestHandler>();
  readonly #notificationHandlers = new Map<string, NotificationHandler>();
  readonly #pending = new Map<JsonRpcId, Pending>();
  readonly #inFlight = new Map<JsonRpcId, AbortController>();
  #nextId = 1;
  #closed: RpcError | null = null;

  constructor(options: RpcPeerOptions) {
    this.#o = options;
    this.onNotification(Cancelled, (params) => {
      const reason = params.reason ?? "cancelled by the peer";
      this.#inFlight.get(params.requestId)?.abort(new RpcError(RpcErrorCode.RequestCancelled, reason));
    });
  }

  get isClosed(): boolean {
    return this.#closed !== null;
  }

  /** Serves request `method`: params are parsed by its schema (bad params: -32602), the return value is the result. */
  handle<M extends RequestMethod>(method: M, handler: Handler<M>): this {
    this.#requestHandlers.set(method.name, async (raw, ctx) => handler(parseParams(method, raw), ctx));
    return this;
  }

  /** Handles notification `method`; params its schema refuses are logged and dropped. */
  onNotification<M extends NotificationMethod>(method: M, handler: (params: ParsedParams<M>) => void): this {
    const schema: M["params"] = method.params;
    this.#notificationHandlers.set(method.name, (raw) => {
      const parsed = z.safeParse(schema, raw);
      if (!parsed.success) {
        this.#o.logger.warn(
          { method: method.name, issues: summarizeIssues(parsed.error) },
          "invalid notification params",
        );
        return;
      }
      handler(parsed.data);
    });
    return this;
  }

  /**
   * Sends a request; resolves with its result or rejects with an RpcError (its code says why).
   * Given a descriptor, the result is parsed by its schema (one that does not fit: InternalError);
   * given a bare name (a generic forwarder), it comes back as the peer sent it.
   */
  request<M extends RequestMethod>(
    method: M,
    params: SentParams<M>,
    options?: RequestOptions,
  ): Promise<ParsedResult<M>>;
  request(method: string, params: unknown, options?: RequestOptions): Promise<unknown>;
  request(method: string | RequestMethod, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (typeof method === "string") return this.#request(method, params, options);
    return this.#request(method.name, params, options).then((result) => parseResult(method, result));
  }

  #request(method: string, params: unknown, options: RequestOptions): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#closed);
    if (options.signal?.aborted) return Promise.reject(abortError(options.signal));
    const id = options.id ?? this.#nextId++;
    if (this.#pending.has(id)) {
      return Promise.reject(new RpcError(RpcErrorCode.InvalidRequest, `request ${id} is already pending`));
    }
    const text = encodeRequest(id, method, params);
    if (exceedsUtf8Bytes(text, this.#o.maxMessageBytes)) {
      return Promise.reject(
        new RpcError(
          RpcErrorCode.ServerError,
          `${method} is over the ${this.#o.maxMessageBytes} byte message limit`,
          {
            reason: "too_large",
          },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        finish();
        this.notify(Cancelled, { requestId: id, reason: reasonText(options.signal) });
        reject(abortError(options.signal));
      };
      const finish = () => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        this.#pending.delete(id);
      };
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          finish();
          this.notify(Cancelled, { requestId: id, reason: "timed out" });
          reject(
            new RpcError(
              RpcErrorCode.ServerError,
              options.timeoutMessage ?? `no answer to ${method} in time`,
              {
                reason: "timeout",
              },
            ),
          );
        }, options.timeoutMs);
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (result) => {
          finish();
          resolve(result);
        },
        reject: (error) => {
          finish();
          reject(error);
        },
      });
      if (!this.#o.send(text)) {
        this.#pending
          .get(id)
          ?.reject(new RpcError(RpcErrorCode.ConnectionClosed, "the connection is closed"));
      }
    });
  }

  /** Sends a notification (of a descriptor, or a bare name); false when the transport could not take it. */
  notify<M extends NotificationMethod>(method: M, params: SentParams<M>): boolean;
  notify(method: string, params: unknown): boolean;
  notify(method: string | NotificationMethod, params: unknown): boolean {
    if (this.#closed) return false;
    return this.#o.send(encodeNotification(typeof method === "string" ? method : method.name, params));
  }

  /** Reads one message from the transport. Never throws. */
  receive(text: string): void {
    const frame = parseFrame(text, { maxBytes: this.#o.maxMessageBytes, maxDepth: MAX_JSON_DEPTH });
    try {
      this.#dispatch(frame);
    } catch (err) {
      this.#o.logger.error({ err }, "rpc dispatch failed");
    }
  }

  /** Answers a message that never reached `receive` (e.g. a line over the size limit). */
  refuse(error: RpcError): void {
    this.#o.logger.warn({ code: error.code, reason: error.message }, "refused a message");
    this.#o.send(encodeError(null, error));
  }

  /**
   * The connection is gone: pending requests reject with ConnectionClosed, handlers in flight
   * are aborted with `reason`. Idempotent.
   */
  close(message = "the connection closed"): void {
    if (this.#closed) return;
    const error = new RpcError(RpcErrorCode.ConnectionClosed, message);
    this.#closed = error;
    for (const pending of [...this.#pending.values()]) pending.reject(error);
    for (const controller of this.#inFlight.values()) controller.abort(error);
    this.#inFlight.clear();
  }

  #dispatch(frame: Frame): void {
    switch (frame.kind) {
      case "request":
        this.#onRequest(frame.id, frame.method, frame.params);
        return;
      case "notification": {
        const refused = this.#o.gate?.(frame.method);
        if (refused) return;
        const handler = this.#notificationHandlers.get(frame.method);
        if (handler) handler(frame.params);
        else this.#o.logger.debug({ method: clip(frame.method) }, "ignored notification");
        return;
      }
      case "result": {
        const pending = this.#pending.get(frame.id);
        if (pending) pending.resolve(frame.result);
        else this.#o.logger.debug({ id: frame.id }, "answer for no pending request");
        return;
      }
      case "error": {
        const pending = frame.id === null ? undefined : this.#pending.get(frame.id);
        if (pending) pending.reject(RpcError.from(frame.error));
        else this.#o.logger.warn({ id: frame.id, error: frame.error }, "error from the peer");
        return;
      }
      case "invalid":
        if (frame.raw !== null && this.#o.adopt?.(frame.raw)) return;
        this.#o.logger.warn({ id: frame.id, reason: frame.error.message }, "invalid message");
        // Answer requests (and unparseable lines, with id null); never answer a response.
        if (!isResponseLike(frame.raw)) this.#o.send(encodeError(frame.id, frame.error));
        return;
    }
  }

  #onRequest(id: JsonRpcId, method: string, params: unknown): void {
    const refused = this.#o.gate?.(method);
    if (refused) {
      this.#respondError(id, refused);
      return;
    }
    const handler = this.#requestHandlers.get(method);
    if (!handler) {
      this.#respondError(id, new RpcError(RpcErrorCode.MethodNotFound, `method not found: ${clip(method)}`));
      return;
    }
    if (this.#inFlight.has(id)) {
      this.#respondError(
        id,
        new RpcError(RpcErrorCode.InvalidRequest, `request ${clip(String(id))} is already in flight`),
      );
      return;
    }
    if (this.#inFlight.size >= (this.#o.maxInFlight ?? 1024)) {
      this.#respondError(
        id,
        new RpcError(RpcErrorCode.ServerError, "too many requests in flight", { reason: "busy" }),
      );
      return;
    }
    const controller = new AbortController();
    this.#inFlight.set(id, controller);
    const settle = () => {
      if (this.#inFlight.get(id) === controller) this.#inFlight.delete(id);
    };
    void (async () => handler(params, { id, signal: controller.signal }))().then(
      (result) => {
        settle();
        if (!this.#closed) this.#respond(id, result);
      },
      (err: unknown) => {
        settle();
        if (this.#closed) return;
        if (err instanceof RpcError) {
          this.#respondError(id, err);
          return;
        }
        this.#o.logger.error({ err, method: clip(method) }, "request handler failed");
        this.#respondError(id, new RpcError(RpcErrorCode.InternalError, "internal error"));
      },
    );
  }

  #respond(id: JsonRpcId, result: unknown): void {
    const text = encodeResult(id, result);
    if (exceedsUtf8Bytes(text, this.#o.maxMessageBytes)) {
      this.#respondError(
        id,
        new RpcError(
          RpcErrorCode.ServerError,
          `the result is over the ${this.#o.maxMessageBytes} byte message limit`,
          {
            reason: "too_large",
          },
        ),
      );
      return;
    }
    this.#o.send(text);
  }

  #respondError(id: JsonRpcId | null, error: RpcError): void {
    this.#o.send(encodeError(id, error));
  }
}

function isResponseLike(raw: unknown): boolean {
  return typeof raw === "object" && raw !== null && !("method" in raw) && ("result" in raw || "error" in raw);
}

function reasonText(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason.message : "cancelled";
}

function abortError(signal: AbortSignal | undefined): RpcError {
  const reason: unknown = signal?.reason;
  if (reason instanceof RpcError) return reason;
  return new RpcError(RpcErrorCode.RequestCancelled, reason instanceof Error ? reason.message : "cancelled");
}
