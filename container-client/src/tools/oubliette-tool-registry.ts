/**
 * Oubliette's own tools, as a droid with an API key sees them: each tool its key allows,
 * registered as `oubliette_<tool>` with its schema (unified tools keep their `action`), replaced
 * whole whenever the list is fetched again.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { OUBLIETTE_TOOL_PREFIX, type OublietteTool } from "../../../protocol/oubliette-tools.js";

export class OublietteToolRegistry {
  #tools: Tool[] = [];
  #byName = new Map<string, string>();

  /** Replaces the tools; returns true if the visible list changed. */
  replace(tools: readonly OublietteTool[]): boolean {
    const before = JSON.stringify(this.#tools);
    this.#tools = tools.map((tool) => ({
      name: `${OUBLIETTE_TOOL_PREFIX}${tool.name}`,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      ...(tool.description === undefined ? {} : { description: tool.description }),
      inputSchema: { type: "object", ...tool.inputSchema },
    }));
    this.#byName = new Map(tools.map((tool) => [`${OUBLIETTE_TOOL_PREFIX}${tool.name}`, tool.name]));
    return JSON.stringify(this.#tools) !== before;
  }

  list(): Tool[] {
    return this.#tools;
  }

  /** The Oubliette tool a droid-visible name stands for, or undefined. */
  get(name: string): string | undefined {
    return this.#byName.get(name);
  }
}
