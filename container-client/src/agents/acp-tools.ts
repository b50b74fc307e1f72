/**
 * ACP tool calls as common events. A call arrives as `tool_call` and changes through
 * `tool_call_update`s; what it is called and its input may come late (OpenCode sends a `pending`
 * call with an empty `rawInput`, then the input when it runs), so the `tool_call` event goes out
 * once the call runs (or ends), with all that is known by then, and the `tool_result` when it
 * is `completed` or `failed`.
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import { type JsonValue, parseJson } from "../../../protocol/json.js";
import type { ToolCallContent, ToolCallUpdate } from "./acp-wire.js";

interface Call {
  name: string;
  input?: JsonValue;
  announced: boolean;
  done: boolean;
  /** First seen in a permission question, whose content was its input (a later content is its result). */
  asked?: boolean;
}

const RUNNING = new Set(["in_progress", "completed", "failed"]);
const ENDED = new Set(["completed", "failed"]);

export class AcpToolCalls {
  readonly #calls = new Map<string, Call>();

  /**
   * A call first seen in a permission question (Gemini asks before it sends any update of the
   * call, and when allowed sends only its end): its title and input as the question told them.
   */
  introduce(update: ToolCallUpdate): void {
    if (this.#calls.has(update.toolCallId)) return;
    this.update({ ...update, status: "pending" });
    const call = this.#calls.get(update.toolCallId);
    if (call) call.asked = true;
  }

  /**
   * The input of a call that runs (an update said `in_progress`: OpenCode's `pending` call
   * carries an empty input, not yet the real one); none before that or once it ended.
   */
  runningInput(toolCallId: string): JsonValue | undefined {
    const call = this.#calls.get(toolCallId);
    return call?.announced && !call.done ? call.input : undefined;
  }

  /** One `tool_call` or `tool_call_update`. */
  update(update: ToolCallUpdate): AgentEventBody[] {
    const id = update.toolCallId;
    const call = this.#calls.get(id) ?? { name: "tool", announced: false, done: false };
    this.#calls.set(id, call);
    if (call.done) return [];
    if (update.title) call.name = update.title;
    else if (update.kind && call.name === "tool") call.name = update.kind;
    if (update.rawInput !== undefined) call.input = update.rawInput;
    // Gemini shows a call's arguments as its content (JSON text) and sends no rawInput.
    else if (!call.announced && call.input === undefined && !call.asked)
      call.input = jsonInContent(update.content);
    const status = update.status ?? "";
    const events: AgentEventBody[] = [];
    if (!call.announced && RUNNING.has(status)) {
      call.announced = true;
      events.push({
        type: "tool_call",
        call_id: id,
        name: call.name.slice(0, 256),
        ...(call.input !== undefined ? { input: call.input } : {}),
      });
    }
    if (ENDED.has(status)) {
      // Kept as done (without its input) so a late duplicate update is not told twice.
      this.#calls.set(id, { name: call.name, announced: true, done: true });
      events.push({
        type: "tool_result",
        call_id: id,
        output: resultText(update),
        is_error: status === "failed",
      });
    }
    return events;
  }
}

function contentText(content: ToolCallContent[] | null | undefined): string[] {
  const texts: string[] = [];
  for (const part of content ?? []) {
    if (part.content?.text !== undefined) texts.push(part.content.text);
    else if (part.type === "diff" && part.path !== undefined) texts.push(`(diff of ${part.path})`);
    else if (part.type === "terminal" && part.terminalId !== undefined)
      texts.push(`(terminal ${part.terminalId})`);
  }
  return texts;
}

function jsonInContent(content: ToolCallContent[] | null | undefined): JsonValue | undefined {
  const [text] = contentText(content);
  if (text === undefined) return undefined;
  const parsed = parseJson(text);
  return parsed.ok && typeof parsed.value === "object" && parsed.value !== null
    ? (parsed.value as JsonValue)
    : undefined;
}

function resultText(update: ToolCallUpdate): string {
  const texts = contentText(update.content);
  if (texts.length > 0) return texts.join("\n");
  const raw = update.rawOutput;
  if (raw === undefined || raw === null) return "";
  if (typeof raw === "string") return raw;
  if (typeof raw === "object" && !Array.isArray(raw) && typeof raw.output === "string") return raw.output;
  return JSON.stringify(raw);
}
