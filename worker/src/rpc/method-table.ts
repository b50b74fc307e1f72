/**
 * The methods a Durable Object serves on a tunnel, each with its params schema: the DO-side
 * counterpart of the host-agent's RpcPeer (which cannot live in an object that hibernates:
 * anything pending must be in storage, and answers are sent by request id whenever they are
 * decided). A handler returns the result, throws an RpcError, or returns DEFERRED to answer later.
 */
import type { z } from "zod";
import { clip, RpcError, RpcErrorCode, summarizeIssues } from "../../../protocol/rpc/errors.js";

/** Returned by a handler that will answer later (by the request's id). */
export const DEFERRED: unique symbol = Symbol("deferred");
export type Deferred = typeof DEFERRED;

type Handler<C> = (params: unknown, ctx: C) => unknown;

export class MethodTable<C> {
  readonly #handlers = new Map<string, Handler<C>>();

  handle<S extends z.ZodType>(
    method: string,
    schema: S,
    handler: (params: z.output<S>, ctx: C) => unknown,
  ): this {
    this.#handlers.set(method, (raw, ctx) => {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        throw new RpcError(RpcErrorCode.InvalidParams, `invalid params: ${summarizeIssues(parsed.error)}`);
      }
      return handler(parsed.data, ctx);
    });
    return this;
  }

  has(method: string): boolean {
    return this.#handlers.has(method);
  }

  /** Runs `method`; throws RpcError (unknown method: -32601, bad params: -32602). */
  dispatch(method: string, params: unknown, ctx: C): unknown {
    const handler = this.#handlers.get(method);
    if (!handler) throw new RpcError(RpcErrorCode.MethodNotFound, `method not found: ${clip(method)}`);
    return handler(params, ctx);
  }
}
