/**
 * Keeps an agent event within the output budget: a tool's output or a message can be far larger
 * than one event may be, so the long text fields are cut (saying so) instead of the event being lost.
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import { jsonBytes } from "../../../protocol/json.js";
import { Limits } from "../../../protocol/limits.js";

/** Room left for the event's other fields and its envelope. */
const TEXT_BUDGET_BYTES = Limits.outputEventBytes - 16 * 1024;
const MAX_ENCODED_BYTES_PER_CHAR = 6;

export function fitEvent(event: AgentEventBody): AgentEventBody {
  if (jsonBytes(event) <= Limits.outputEventBytes) return event;
  if ("output" in event) return { ...event, output: cut(event.output) };
  if ("text" in event && typeof event.text === "string") {
    const { data: _dropped, ...rest } = event as AgentEventBody & { data?: unknown };
    return { ...rest, text: cut(event.text) } as AgentEventBody;
  }
  if (event.type === "tool_call") return { ...event, input: { cut: `${jsonBytes(event.input)} bytes` } };
  const bytes = jsonBytes(event);
  return {
    type: "droid_log",
    text: `[oubliette] dropped a ${bytes}-byte ${event.type} event (limit ${Limits.outputEventBytes} bytes encoded)`,
  };
}

/** The text cut to the budget, by characters (encoded as JSON, one is at most six bytes: `\\uXXXX`). */
function cut(text: string): string {
  const keep = Math.floor(TEXT_BUDGET_BYTES / MAX_ENCODED_BYTES_PER_CHAR);
  if (text.length <= keep) return text;
  return `${text.slice(0, keep)}… [cut: ${text.length - keep} more characters]`;
}
