/**
 * The methods a Durable Object serves on a tunnel, by their descriptors (`protocol/rpc/method.ts`):
 * the DO-side counterpart of the host-agent's RpcPeer (which cannot live in an object that
 * hibernates: anything pending must be in storage, and answers are sent by request id whenever
 * they are decided). A request handler returns the result, throws an RpcError (or returns one),
 * or returns DEFERRED to answer later; a notification handler returns nothing.
 */
import { z } from "zod";
import { clip, RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  type NotificationMethod,
  type ParsedParams,
  parseParams,
  type RequestMethod,
  type SentResult,
} from "../../../protocol/rpc/method.js";

/** Returned by a handler that will answer later (by the request's id). */
export const DEFERRED: unique symbol = Symbol("deferred");
export type Deferred = typeof DEFERRED;

/** What a request handler answers: the result, an error to send, or DEFERRED. */
type Answer<M extends RequestMethod> = SentResult<M> | RpcError | Deferred;

type Handler<C> = (params: unknown, ctx: C) => unknown;

export class MethodTable<C> {
  readonly #requests = new Map<string, Handler<C>>();
  readonly #notifications = new Map<string, Handler<C>>();

  /** Serves request `method`: params are parsed by its schema (bad params: -32602). */
  handle<M extends RequestMethod>(
    method: M,
    handler: (params: ParsedParams<M>, ctx: C) => Answer<M> | Promise<Answer<M>>,
  ): this {
    this.#requests.set(method.name, (raw, ctx) => handler(parseParams(method, raw), ctx));
    return this;
  }

  /** Handles notification `method`; params its schema refuses are dropped. */
  onNotification<M extends NotificationMethod>(
    method: M,
    handler: (params: ParsedParams<M>, ctx: C) => void,
  ): this {
    const schema: M["params"] = method.params;
    this.#notifications.set(method.name, (raw, ctx) => {
      const parsed = z.safeParse(schema, raw);
      if (parsed.success) handler(parsed.data, ctx);
    });
    return this;
  }

  /** Runs request `method`; throws RpcError (unknown method: -32601, bad params: -32602). */
  dispatch(method: string, params: unknown, ctx: C): unknown {
    const handler = this.#requests.get(method);
    if (!handler) throw new RpcError(RpcErrorCode.MethodNotFound, `method not found: ${clip(method)}`);
    return handler(params, ctx);
  }

  /** Runs notification `method`; an unknown one is ignored. */
  notified(method: string, params: unknown, ctx: C): void {
    this.#notifications.get(method)?.(params, ctx);
  }
}
