/**
 * The methods the relay socket serves, with their params validated. Checking is synchronous so
 * a request that follows `hello` in the same chunk already sees the connection authenticated.
 */
import type { z } from "zod";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import {
  CallerToolParamsSchema,
  HelloParamsSchema,
  type JsonRpcRequest,
  PingParamsSchema,
  SocketMethod,
} from "../../../protocol/socket.js";
import { RpcError, summarizeIssues } from "./rpc-error.js";

export type RelayRequest =
  | { method: "hello"; params: z.infer<typeof HelloParamsSchema> }
  | { method: "ping" }
  | { method: "caller_tool"; params: z.infer<typeof CallerToolParamsSchema> };

function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.infer<S> {
  const parsed = schema.safeParse(params);
  if (!parsed.success) {
    throw new RpcError(RpcErrorCode.InvalidParams, `invalid params: ${summarizeIssues(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * Resolves a request to a known method with valid params, or throws the `RpcError` to answer
 * with: unknown method (-32601), not authenticated (-32003), bad params (-32602).
 */
export function parseRelayRequest(request: JsonRpcRequest, authenticated: boolean): RelayRequest {
  const { method, params } = request;
  if (method !== SocketMethod.hello && method !== SocketMethod.ping && method !== SocketMethod.callerTool) {
    throw new RpcError(RpcErrorCode.MethodNotFound, `method not found: ${method.slice(0, 64)}`);
  }
  if (method === SocketMethod.ping) {
    parseParams(PingParamsSchema, params);
    return { method };
  }
  if (method === SocketMethod.hello) return { method, params: parseParams(HelloParamsSchema, params) };
  if (!authenticated) throw new RpcError(RpcErrorCode.Unauthenticated, "unauthenticated: send hello first");
  return { method, params: parseParams(CallerToolParamsSchema, params) };
}
