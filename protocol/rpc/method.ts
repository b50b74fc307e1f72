/**
 * A wire method carries its name and its schemas together: one descriptor per method of the
 * container socket and the tunnel, which the side that serves it and the side that calls it both
 * import, so nobody pairs a name with a schema by hand. The server parses `params` with it; the
 * caller of a request parses its `result`. Outgoing params and results are never transformed
 * (what is sent is what the sender built), only typed: a sender writes a schema's input, a
 * receiver reads its output.
 */
import { z } from "zod";
import { RpcError, RpcErrorCode, summarizeIssues } from "./errors.js";

/** A request: params one way, a result (or an error) back. */
export interface RequestMethod<
  N extends string = string,
  P extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  readonly kind: "request";
  readonly name: N;
  readonly params: P;
  readonly result: R;
}

/** A notification: params one way, nothing back. */
export interface NotificationMethod<N extends string = string, P extends z.ZodType = z.ZodType> {
  readonly kind: "notification";
  readonly name: N;
  readonly params: P;
}

export type MethodDescriptor = RequestMethod | NotificationMethod;

/** Params as a sender writes them (before the receiver's defaults). */
export type SentParams<M extends MethodDescriptor> = z.input<M["params"]>;
/** Params as a handler receives them: parsed. */
export type ParsedParams<M extends MethodDescriptor> = z.output<M["params"]>;
/** A result as a handler returns it (sent as is). */
export type SentResult<M extends RequestMethod> = z.input<M["result"]>;
/** A result as the caller of the request receives it: parsed. */
export type ParsedResult<M extends RequestMethod> = z.output<M["result"]>;

/** The result of a request that answers nothing but success: `{}` (any object is read as success). */
export const EmptyResultSchema = z.object({});

/** The descriptor of request `name`. */
export function defineRequest<const N extends string, P extends z.ZodType, R extends z.ZodType>(
  name: N,
  schemas: { params: P; result: R },
): RequestMethod<N, P, R> {
  return { kind: "request", name, params: schemas.params, result: schemas.result };
}

/** The descriptor of notification `name`. */
export function defineNotification<const N extends string, P extends z.ZodType>(
  name: N,
  schemas: { params: P },
): NotificationMethod<N, P> {
  return { kind: "notification", name, params: schemas.params };
}

/** The name of each method of a table (`{ callerTool: "caller_tool", … }`), derived from its descriptors. */
export function methodNames<T extends Record<string, MethodDescriptor>>(
  methods: T,
): { readonly [K in keyof T]: T[K]["name"] } {
  const names = Object.fromEntries(Object.entries(methods).map(([key, method]) => [key, method.name]));
  // Object.fromEntries cannot say that each key keeps its own literal; the map above does exactly that.
  return names as { readonly [K in keyof T]: T[K]["name"] };
}

/** A request's or notification's params, parsed; bad params throw InvalidParams (-32602). */
export function parseParams<M extends MethodDescriptor>(method: M, raw: unknown): ParsedParams<M> {
  // Typed by the descriptor, not its constraint, so the parsed params keep their type.
  const schema: M["params"] = method.params;
  const parsed = z.safeParse(schema, raw);
  if (!parsed.success) {
    throw new RpcError(RpcErrorCode.InvalidParams, `invalid params: ${summarizeIssues(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * A request's result, parsed; one that is not what the protocol says throws InternalError (local:
 * the answer came from the peer, so nobody is told but the caller).
 */
export function parseResult<M extends RequestMethod>(method: M, raw: unknown): ParsedResult<M> {
  const schema: M["result"] = method.result;
  const parsed = z.safeParse(schema, raw);
  if (!parsed.success) {
    throw new RpcError(
      RpcErrorCode.InternalError,
      `invalid result of ${method.name}: ${summarizeIssues(parsed.error)}`,
    );
  }
  return parsed.data;
}

/**
 * A result a handler relays from a layer that does not type it, checked against `method`'s schema
 * but never transformed (it is sent exactly as the layer made it); one that does not fit throws
 * InternalError.
 */
export function checkResult<M extends RequestMethod>(method: M, value: unknown): SentResult<M> {
  const checked = method.result.safeParse(value);
  if (!checked.success) {
    throw new RpcError(
      RpcErrorCode.InternalError,
      `invalid result of ${method.name}: ${summarizeIssues(checked.error)}`,
    );
  }
  // The schema accepted `value` itself (its parsed copy is dropped so nothing it rewrites reaches the wire).
  return value as SentResult<M>;
}
