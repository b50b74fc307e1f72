/**
 * Classifies one line the host-agent sent: a response to one of our requests, a tools config
 * (in the JSON-RPC `method` form or the seed's `type` form), or something we log and drop.
 */
import { z } from "zod";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import { tryParseJson } from "../../../protocol/json.js";
import {
  CallerToolsConfigNotificationSchema,
  type JsonRpcErrorObject,
  JsonRpcFailureSchema,
  type JsonRpcId,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  JsonRpcSuccessSchema,
  LegacyCallerToolsConfigSchema,
} from "../../../protocol/socket.js";

export type IncomingMessage =
  | { kind: "result"; id: JsonRpcId; result: unknown }
  | { kind: "error"; id: JsonRpcId | null; error: JsonRpcErrorObject }
  | { kind: "config"; config: CallerToolsConfig }
  | { kind: "request"; id: JsonRpcId; method: string }
  | { kind: "notification"; method: string }
  | { kind: "invalid"; reason: string };

/** Anything that claims to be a tools config, in either form, before its params are checked. */
const ConfigClaimSchema = z.union([
  z.object({ method: z.literal("caller_tools_config") }),
  z.object({ type: z.literal("caller_tools_config") }),
]);

function summarize(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}

/** Parses one line from the host-agent; never throws. */
export function classifyIncoming(text: string): IncomingMessage {
  const json = tryParseJson(text);
  if (!json.ok) return { kind: "invalid", reason: `invalid JSON: ${json.error}` };
  const value = json.value;

  const success = JsonRpcSuccessSchema.safeParse(value);
  if (success.success) return { kind: "result", id: success.data.id, result: success.data.result };
  const failure = JsonRpcFailureSchema.safeParse(value);
  if (failure.success) return { kind: "error", id: failure.data.id, error: failure.data.error };

  const claim = ConfigClaimSchema.safeParse(value);
  if (claim.success) {
    const parsed =
      "method" in claim.data
        ? CallerToolsConfigNotificationSchema.safeParse(value)
        : LegacyCallerToolsConfigSchema.safeParse(value);
    if (parsed.success) return { kind: "config", config: parsed.data.params };
    return { kind: "invalid", reason: `invalid caller_tools_config: ${summarize(parsed.error)}` };
  }

  const request = JsonRpcRequestSchema.safeParse(value);
  if (request.success) return { kind: "request", id: request.data.id, method: request.data.method };
  const notification = JsonRpcNotificationSchema.safeParse(value);
  if (notification.success) return { kind: "notification", method: notification.data.method };
  return { kind: "invalid", reason: "not a JSON-RPC message" };
}
