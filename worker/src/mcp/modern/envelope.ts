import { LoggingLevelSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** The `_meta` keys MCP 2026-07-28 reserves for the protocol (`io.modelcontextprotocol/…`). */
export const MetaKey = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId",
} as const;

/** The Tasks extension (SEP-2663): its id in `capabilities.extensions`. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** A client's capabilities as one request declares them (unknown keys kept: they are the client's). */
export const ClientCapabilitiesSchema = z.looseObject({
  elicitation: z.looseObject({}).optional(),
  sampling: z.looseObject({}).optional(),
  roots: z.looseObject({}).optional(),
  extensions: z.record(z.string(), z.looseObject({})).optional(),
});
export type ClientCapabilities = z.infer<typeof ClientCapabilitiesSchema>;

/** What every stateless request says about its client, from `params._meta` (SEP-2575). */
export interface RequestEnvelope {
  protocolVersion: string;
  capabilities: ClientCapabilities;
  clientInfo: { name: string; version: string } | null;
}

const EnvelopeSchema = z.object({
  [MetaKey.protocolVersion]: z.string().min(1).max(64),
  [MetaKey.clientCapabilities]: ClientCapabilitiesSchema,
  [MetaKey.clientInfo]: z.looseObject({ name: z.string().max(256), version: z.string().max(256) }).optional(),
  // Validated (an unknown level is refused, as the spec says) but never acted on: this server
  // sends no log messages to stateless clients (it declares no `logging`).
  [MetaKey.logLevel]: LoggingLevelSchema.optional(),
});

/** Whether a request's `_meta` claims the stateless era (it names a protocol version). */
export function claimsEnvelope(meta: unknown): boolean {
  return typeof meta === "object" && meta !== null && MetaKey.protocolVersion in meta;
}

/** Reads the envelope from `params._meta`; a readable reason when a required field is missing or wrong. */
export function readEnvelope(
  meta: unknown,
): { ok: true; envelope: RequestEnvelope } | { ok: false; reason: string } {
  const parsed = EnvelopeSchema.safeParse(meta ?? {});
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? "_meta")))];
    return { ok: false, reason: `params._meta is missing or has an invalid ${fields.join(", ")}` };
  }
  const value = parsed.data;
  const info = value[MetaKey.clientInfo];
  return {
    ok: true,
    envelope: {
      protocolVersion: value[MetaKey.protocolVersion],
      capabilities: value[MetaKey.clientCapabilities],
      clientInfo: info ? { name: info.name, version: info.version } : null,
    },
  };
}

/** Whether the request declared the Tasks extension (per request: never remembered). */
export function declaresTasks(capabilities: ClientCapabilities): boolean {
  return capabilities.extensions?.[TASKS_EXTENSION] !== undefined;
}
