/**
 * The caller tools the droid can see, rebuilt from each `caller_tools_config`: every declaration
 * replaces the whole set, and names carry the caller's prefix (`{caller_id}_{tool}`).
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import {
  type CallerToolsConfig,
  DEFAULT_INPUT_SCHEMA,
  prefixedToolName,
} from "../../../protocol/caller-tools.js";

/** What a droid-visible tool name maps back to. */
export interface RegisteredCallerTool {
  /** The caller's own name for the tool (what the socket's `caller_tool` expects). */
  callerTool: string;
  /** How long the droid waits at most (the session's deadline plus the reconnect budget). */
  backstopMs: number;
}

export class CallerToolRegistry {
  #tools: Tool[] = [];
  #byName = new Map<string, RegisteredCallerTool>();

  /** Replaces the registered tools; returns true if the visible list changed. */
  replace(config: CallerToolsConfig): boolean {
    const before = JSON.stringify(this.#tools);
    const tools: Tool[] = [];
    const byName = new Map<string, RegisteredCallerTool>();
    // Without a caller id there is no prefix to give the tools, so none are exposed.
    if (config.caller_id !== null) {
      for (const tool of config.tools) {
        const name = prefixedToolName(config.caller_id, tool.name);
        tools.push({
          name,
          ...(tool.title === undefined ? {} : { title: tool.title }),
          ...(tool.description === undefined ? {} : { description: tool.description }),
          inputSchema: tool.inputSchema ?? DEFAULT_INPUT_SCHEMA,
        });
        byName.set(name, { callerTool: tool.name, backstopMs: config.backstop_ms });
      }
    }
    this.#tools = tools;
    this.#byName = byName;
    return JSON.stringify(tools) !== before;
  }

  /** The tools as MCP `tools/list` entries. */
  list(): Tool[] {
    return this.#tools;
  }

  /** Looks up a droid-visible tool name. */
  get(name: string): RegisteredCallerTool | undefined {
    return this.#byName.get(name);
  }
}
