/**
 * Codex's thread items as common events: a finished `agentMessage` is a `message`; an MCP tool
 * call, a shell command or a file change is a `tool_call` when it starts and a `tool_result`
 * when it completes (with the call first if its start was never seen).
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import type { JsonValue } from "../../../protocol/json.js";
import { type Item, ItemSchema } from "./codex-wire.js";

type ToolItem = Exclude<Item, { type: "agentMessage" }>;

export class CodexItems {
  readonly #called = new Set<string>();

  /** `item/started`. */
  started(raw: unknown): AgentEventBody[] {
    const item = parseItem(raw);
    if (item === undefined || item.type === "agentMessage") return [];
    return this.#call(item);
  }

  /** `item/completed`. */
  completed(raw: unknown): AgentEventBody[] {
    const item = parseItem(raw);
    if (item === undefined) return [];
    if (item.type === "agentMessage") return item.text === "" ? [] : [{ type: "message", text: item.text }];
    const events = this.#call(item);
    this.#called.delete(item.id);
    events.push({ type: "tool_result", call_id: item.id, ...toolResult(item) });
    return events;
  }

  #call(item: ToolItem): AgentEventBody[] {
    if (this.#called.has(item.id)) return [];
    this.#called.add(item.id);
    return [{ type: "tool_call", call_id: item.id, ...toolCall(item) }];
  }
}

function parseItem(raw: unknown): Item | undefined {
  const parsed = ItemSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

function toolCall(item: ToolItem): { name: string; input: JsonValue } {
  switch (item.type) {
    case "mcpToolCall":
      // As the model knows it: Codex puts MCP tools in the `mcp__<server>` namespace.
      return { name: `mcp__${item.server}__${item.tool}`, input: item.arguments ?? {} };
    case "commandExecution":
      return { name: "shell", input: { command: item.command, ...(item.cwd ? { cwd: item.cwd } : {}) } };
    case "fileChange":
      return { name: "apply_patch", input: { paths: item.changes.map((change) => change.path) } };
  }
}

function toolResult(item: ToolItem): { output: string; is_error: boolean } {
  switch (item.type) {
    case "mcpToolCall": {
      const content = item.result?.content ?? [];
      const text = content.map((part) => part.text ?? JSON.stringify(part)).join("\n");
      const isError = item.status !== "completed" || item.error != null;
      return { output: item.error?.message ?? text, is_error: isError };
    }
    case "commandExecution":
      return {
        output: item.aggregatedOutput ?? "",
        is_error: item.status !== "completed" || (item.exitCode ?? 0) !== 0,
      };
    case "fileChange":
      return { output: item.status, is_error: item.status !== "completed" };
  }
}
