/**
 * Classifies one line received on the relay socket: a request to answer, a notification to
 * ignore, or a protocol fault to answer with a JSON-RPC error (id null when none can be read).
 */
import { z } from "zod";
import { tryParseJson } from "../../../protocol/json.js";
import { RpcErrorCode } from "../../../protocol/rpc-errors.js";
import {
  type JsonRpcId,
  JsonRpcIdSchema,
  JsonRpcNotificationSchema,
  type JsonRpcRequest,
  JsonRpcRequestSchema,
} from "../../../protocol/socket.js";
import { RpcError, summarizeIssues } from "./rpc-error.js";

export type IncomingLine =
  | { kind: "request"; request: JsonRpcRequest }
  | { kind: "notification"; method: string }
  | { kind: "fault"; id: JsonRpcId | null; error: RpcError };

const HasIdSchema = z.object({ id: JsonRpcIdSchema });

/** Parses one line into a request, a notification or a fault; never throws. */
export function classifyLine(text: string): IncomingLine {
  const json = tryParseJson(text);
  if (!json.ok) {
    return {
      kind: "fault",
      id: null,
      error: new RpcError(RpcErrorCode.ParseError, "parse error: invalid JSON"),
    };
  }
  const value = json.value;
  if (Array.isArray(value)) {
    return {
      kind: "fault",
      id: null,
      error: new RpcError(RpcErrorCode.InvalidRequest, "invalid request: batches are not supported"),
    };
  }
  const request = JsonRpcRequestSchema.safeParse(value);
  if (request.success) return { kind: "request", request: request.data };

  const hasId = HasIdSchema.safeParse(value);
  if (!hasId.success) {
    const notification = JsonRpcNotificationSchema.safeParse(value);
    if (notification.success) return { kind: "notification", method: notification.data.method };
  }
  // Answer with the request's id when it has a usable one, so the sender can match the error.
  const id = hasId.success ? hasId.data.id : null;
  return {
    kind: "fault",
    id,
    error: new RpcError(RpcErrorCode.InvalidRequest, `invalid request: ${summarizeIssues(request.error)}`),
  };
}
