import { clip } from "../../../../protocol/rpc/errors.js";
import type { CallerPrincipal } from "../../auth/tokens.js";
import { config, type Env } from "../../env.js";
import type { McpOrigin } from "../../flows/context.js";
import { errorMessage, type Log } from "../../log.js";
import { SSE_HEADERS, type SseStream } from "../../streams/sse.js";
import { jsonReply, McpErrorCode, RpcError, toResponse } from "../json-rpc.js";
import { PostReply } from "../post-reply.js";
import { SERVER_INFO } from "../server-info.js";
import type { ModernMessage, Rejection } from "./classify.js";
import { MetaKey, type RequestEnvelope } from "./envelope.js";
import { decodeHeaderValue } from "./header-values.js";
import type { ModernCall } from "./method.js";
import { MODERN_METHODS } from "./methods.js";

/** A stateless request that passed classification, with what it needs to run. */
export interface ModernPost {
  env: Env;
  principal: CallerPrincipal;
  log: Log;
  message: ModernMessage;
  envelope: RequestEnvelope;
  /** The client's Accept lists text/event-stream: a call that waits may answer as a stream. */
  acceptsSse: boolean;
  header(name: string): string | undefined;
  waitUntil(promise: Promise<unknown>): void;
}

/** A refusal as its HTTP answer (JSON, the request's id echoed). */
export function rejectionResponse(rejection: Rejection): Response {
  const error = {
    code: rejection.code,
    message: rejection.message,
    ...(rejection.data === undefined ? {} : { data: rejection.data }),
  };
  return toResponse(jsonReply({ jsonrpc: "2.0", id: rejection.id, error }, {}, rejection.status));
}

/**
 * Answers one stateless (2026-07-28) request in the Worker: no MCP session object, nothing
 * remembered between requests. After classification come the checks that need the method table —
 * known method (404, -32601), `Mcp-Name` against the body, declared capabilities (-32021),
 * `Mcp-Param-*` — then the method: its result, or the Response a long-lived method streams
 * itself (`subscriptions/listen`). Notifications are accepted (202) and need nothing done: the
 * revision defines none a client sends to a server over HTTP.
 */
export async function serveModern(post: ModernPost): Promise<Response> {
  const { message } = post;
  if (message.id === null) return new Response(null, { status: 202 });
  const id = message.id;
  const refuse = (status: number, code: number, text: string, data?: unknown) =>
    rejectionResponse({ status, id, code, message: text, ...(data === undefined ? {} : { data }) });
  const method = MODERN_METHODS[message.method];
  if (!method) return refuse(404, McpErrorCode.methodNotFound, `Method not found: ${clip(message.method)}`);
  if (method.routedBy) {
    const mismatch = nameMismatch(message.params[method.routedBy], post.header("mcp-name"));
    if (mismatch) return refuse(400, McpErrorCode.headerMismatch, `Header mismatch: ${mismatch}`);
  }
  const missing = method.missingCapabilities?.(post.envelope.capabilities, message.params) ?? null;
  if (missing) {
    return refuse(400, McpErrorCode.missingClientCapability, "Missing required client capability", {
      requiredCapabilities: missing,
    });
  }
  const headers = method.headerMismatch?.(message.params, post.header) ?? null;
  if (headers) return refuse(400, McpErrorCode.headerMismatch, `Header mismatch: ${headers}`);

  let stream: SseStream | null = null;
  const cancel = new AbortController();
  const reply = new PostReply(
    post.acceptsSse,
    () => null,
    (kept) => {
      stream = kept;
      return "stateless";
    },
    () => cancel.abort(new Error("the client closed the response stream")),
  );
  const token = progressToken(message.params);
  const origin: McpOrigin = {
    via: null,
    remember() {},
    progress: (update) => reply.progress(token, update),
    progressEveryMs: config(post.env).keepAliveMs,
  };
  const call: ModernCall = {
    id,
    env: post.env,
    principal: post.principal,
    log: post.log,
    envelope: post.envelope,
    params: message.params,
    origin,
    signal: cancel.signal,
    header: post.header,
    waitUntil: post.waitUntil,
  };
  const failed = (err: unknown) => {
    if (err instanceof RpcError) return { jsonrpc: "2.0", id, error: err.toErrorObject() };
    post.log.error("MCP request failed", { method: clip(message.method), error: errorMessage(err) });
    return { jsonrpc: "2.0", id, error: { code: McpErrorCode.internalError, message: "Internal error" } };
  };
  // A long-lived request (subscriptions/listen) answers with its own stream, or an error as JSON.
  if ("stream" in method) return method.stream(call).catch((err) => toResponse(jsonReply(failed(err))));
  const answer = method
    .handle(call)
    .then((result) => ({ jsonrpc: "2.0", id, result: stamp(result) }), failed);
  // A Worker's work stops when its client leaves, unless it is waited for: the call must live on
  // to notice (its stream's next write fails) and cancel what it started.
  post.waitUntil(answer);
  const settled = await reply.settle(
    answer.then((response) => [response]),
    false,
    {},
  );
  const streamed = stream as SseStream | null;
  if (settled.streamId === undefined || streamed === null) return toResponse(settled);
  return new Response(streamed.readable, { headers: SSE_HEADERS });
}

/** Every 2026 result says what it is and who answered. */
function stamp(result: Record<string, unknown>): Record<string, unknown> {
  const meta = typeof result._meta === "object" && result._meta !== null ? result._meta : {};
  return {
    ...result,
    resultType: result.resultType ?? "complete",
    _meta: { ...meta, [MetaKey.serverInfo]: SERVER_INFO },
  };
}

/** Why `Mcp-Name` does not stand for the body's routing value, or null (no value: nothing to check). */
function nameMismatch(bodyValue: unknown, raw: string | undefined): string | null {
  if (typeof bodyValue !== "string") return null;
  if (raw === undefined) return "the Mcp-Name header is required";
  const decoded = decodeHeaderValue(raw);
  if (!decoded.ok) return `Mcp-Name ${decoded.reason}`;
  if (decoded.value !== bodyValue) {
    return `Mcp-Name header value '${clip(decoded.value)}' does not match body value '${clip(bodyValue)}'`;
  }
  return null;
}

function progressToken(params: Record<string, unknown>): string | number | undefined {
  const meta = params._meta as Record<string, unknown> | undefined;
  const token = meta?.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}
