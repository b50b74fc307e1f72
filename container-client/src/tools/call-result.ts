/**
 * Turns what the caller returned (or why it failed) into the MCP result the droid sees. Caller
 * failures are tool errors (`isError: true`) the droid can read, never protocol errors.
 */
import { type CallToolResult, CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { JsonValue } from "../../../protocol/json.js";
import { RelayCallError } from "../socket/relay-errors.js";

/** A one-text-block tool error result. */
export function toolErrorResult(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

function hasContentArray(value: JsonValue): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Array.isArray(value.content);
}

/**
 * Maps a caller's result: an MCP CallToolResult passes through as is, a string becomes one text
 * block, anything else one text block holding its JSON.
 */
export function toCallToolResult(result: JsonValue): CallToolResult {
  if (hasContentArray(result)) {
    const parsed = CallToolResultSchema.safeParse(result);
    if (parsed.success) return parsed.data;
  }
  const text = typeof result === "string" ? result : JSON.stringify(result);
  return { content: [{ type: "text", text }] };
}

/** Maps a failed relay call to a tool error whose text says what went wrong, in the droid's terms. */
export function failureResult(err: unknown): CallToolResult {
  if (!(err instanceof RelayCallError)) return toolErrorResult("internal error in the container-client");
  // A caller's error reads as the caller's own message; the host-agent words timeouts itself.
  return toolErrorResult(err.message);
}
