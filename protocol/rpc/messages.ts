/**
 * One message family for the container socket and the tunnel: JSON-RPC 2.0 requests, results,
 * errors and notifications, with `notifications/cancelled` as the cancel message. `parseFrame` is
 * the one way any side reads a line or frame: it never throws, and what it cannot use comes back
 * as `invalid` with the error to answer (id null when no usable id could be read).
 */
import { z } from "zod";
import { exceedsUtf8Bytes, parseJson, utf8Length } from "../json.js";
import { clip, type JsonRpcErrorObject, JsonRpcErrorObjectSchema, RpcError, RpcErrorCode } from "./errors.js";
import {
  defineNotification,
  type NotificationMethod,
  type RequestMethod,
  type SentParams,
} from "./method.js";

export const JsonRpcIdSchema = z.union([z.string().min(1).max(128), z.number().int().safe()]);
export type JsonRpcId = z.infer<typeof JsonRpcIdSchema>;

const MethodSchema = z.string().min(1).max(128);

const RequestSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcIdSchema,
  method: MethodSchema,
  params: z.unknown().optional(),
});
const NotificationSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: MethodSchema,
  params: z.unknown().optional(),
});
const SuccessSchema = z.object({ jsonrpc: z.literal("2.0"), id: JsonRpcIdSchema, result: z.unknown() });
const FailureSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcIdSchema.nullable(),
  error: JsonRpcErrorObjectSchema,
});

/** The cancel message: the sender no longer wants the answer to request `requestId`. */
export const CANCELLED = "notifications/cancelled";
export const CancelledParamsSchema = z.object({
  requestId: JsonRpcIdSchema,
  reason: z.string().max(1024).optional(),
});
export type CancelledParams = z.infer<typeof CancelledParamsSchema>;
export const Cancelled = defineNotification(CANCELLED, { params: CancelledParamsSchema });

export type Frame =
  | { kind: "request"; id: JsonRpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "result"; id: JsonRpcId; result: unknown }
  | { kind: "error"; id: JsonRpcId | null; error: JsonRpcErrorObject }
  /** Unusable; answer `error` to `id` (or, when `id` is null and it was no request, just log it). */
  | { kind: "invalid"; id: JsonRpcId | null; error: RpcError; raw: unknown };

export interface FrameLimits {
  maxBytes: number;
  maxDepth: number;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function invalid(
  message: string,
  code: number = RpcErrorCode.InvalidRequest,
  raw: unknown = null,
  id: JsonRpcId | null = null,
): Frame {
  return { kind: "invalid", id, error: new RpcError(code, message), raw };
}

/** Reads one line or frame. Never throws. */
export function parseFrame(text: string, limits: FrameLimits): Frame {
  if (exceedsUtf8Bytes(text, limits.maxBytes)) {
    return invalid(`message of ${utf8Length(text)} bytes exceeds the ${limits.maxBytes} byte limit`);
  }
  const json = parseJson(text, limits.maxDepth);
  if (!json.ok) {
    return json.reason === "too_deep"
      ? invalid(`invalid request: ${json.error}`)
      : invalid("parse error: invalid JSON", RpcErrorCode.ParseError);
  }
  const value = json.value;
  if (Array.isArray(value)) return invalid("invalid request: batches are not supported", undefined, value);
  if (!isObject(value)) return invalid("invalid request: not a JSON-RPC message", undefined, value);

  // An `id` that is present but unusable makes the message invalid, never a notification.
  const hasId = "id" in value && value.id !== undefined;
  const id = hasId ? JsonRpcIdSchema.safeParse(value.id) : null;
  const usableId = id?.success ? id.data : null;
  if (hasId && !id?.success && "method" in value) {
    return invalid("invalid request: id must be a string (1-128 chars) or an integer", undefined, value);
  }

  if ("method" in value) {
    const method = typeof value.method === "string" ? ` ${clip(value.method)}` : "";
    if (hasId) {
      const request = RequestSchema.safeParse(value);
      if (!request.success)
        return invalid(`invalid request${method}: ${describe(request.error)}`, undefined, value, usableId);
      return {
        kind: "request",
        id: request.data.id,
        method: request.data.method,
        params: request.data.params,
      };
    }
    const notification = NotificationSchema.safeParse(value);
    if (!notification.success)
      return invalid(`invalid notification${method}: ${describe(notification.error)}`, undefined, value);
    return { kind: "notification", method: notification.data.method, params: notification.data.params };
  }
  if ("error" in value) {
    const parsed = FailureSchema.safeParse(value);
    if (parsed.success) return { kind: "error", id: parsed.data.id, error: parsed.data.error };
    return invalid(`invalid error response: ${describe(parsed.error)}`, undefined, value);
  }
  if ("result" in value) {
    const parsed = SuccessSchema.safeParse(value);
    if (parsed.success) return { kind: "result", id: parsed.data.id, result: parsed.data.result };
    return invalid(`invalid response: ${describe(parsed.error)}`, undefined, value);
  }
  return invalid("invalid request: not a JSON-RPC message", undefined, value, usableId);
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "malformed";
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
  return `${where}: ${issue.message}`;
}

/** A request's text: of a method's descriptor (params typed by it), or of a bare name. */
export function encodeRequest<M extends RequestMethod>(
  id: JsonRpcId,
  method: M,
  params: SentParams<M>,
): string;
export function encodeRequest(id: JsonRpcId, method: string, params: unknown): string;
export function encodeRequest(id: JsonRpcId, method: string | RequestMethod, params: unknown): string {
  const name = typeof method === "string" ? method : method.name;
  return JSON.stringify({ jsonrpc: "2.0", id, method: name, params });
}

/** A notification's text: of a method's descriptor (params typed by it), or of a bare name. */
export function encodeNotification<M extends NotificationMethod>(method: M, params: SentParams<M>): string;
export function encodeNotification(method: string, params: unknown): string;
export function encodeNotification(method: string | NotificationMethod, params: unknown): string {
  const name = typeof method === "string" ? method : method.name;
  return JSON.stringify({ jsonrpc: "2.0", method: name, params });
}

export function encodeResult(id: JsonRpcId, result: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", id, result: result ?? null });
}

export function encodeError(id: JsonRpcId | null, error: RpcError | JsonRpcErrorObject): string {
  const object = error instanceof RpcError ? error.toErrorObject() : error;
  return JSON.stringify({ jsonrpc: "2.0", id, error: object });
}
