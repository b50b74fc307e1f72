/** Reading an agent's JSON lines: parse, and pick typed fields out of loosely shaped objects. */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import type { JsonValue } from "../../../protocol/json.js";
import { parseJson } from "../../../protocol/json.js";

export type JsonRecord = Record<string, unknown>;

/** The line as a JSON object, or null (not JSON, or not an object). */
export function jsonObject(line: string): JsonRecord | null {
  const parsed = parseJson(line);
  return parsed.ok ? record(parsed.value) : null;
}

export function record(value: unknown): JsonRecord | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonRecord) : null;
}

export function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A value as JSON for an event (it came out of JSON.parse, so it is JSON). */
export function json(value: unknown): JsonValue {
  return (value ?? null) as JsonValue;
}

/** Text of a tool result, which CLIs give as a string or as content blocks (`{type:"text", text}`). */
export function contentText(value: unknown): string {
  if (typeof value === "string") return value;
  const parts = list(value).map((block) => {
    const b = record(block);
    return b?.type === "text" && typeof b.text === "string" ? b.text : JSON.stringify(block);
  });
  return parts.length > 0 ? parts.join("\n") : value === undefined ? "" : JSON.stringify(value);
}

/** An assistant message's content blocks (Anthropic's shape, which Claude Code and Droid both print): text → `message`, tool_use → `tool_call`. */
export function assistantBlocks(content: unknown): AgentEventBody[] {
  const events: AgentEventBody[] = [];
  for (const block of list(content)) {
    const b = record(block);
    if (b?.type === "text" && typeof b.text === "string" && b.text !== "")
      events.push({ type: "message", text: b.text });
    else if (b?.type === "tool_use")
      events.push({
        type: "tool_call",
        call_id: text(b.id) ?? "",
        name: text(b.name) ?? "",
        input: json(b.input),
      });
  }
  return events;
}
