import type { z } from "zod";
import type { ActionDefinition, ToolDefinition } from "./define.js";
import { argumentsSchema } from "./define.js";
import { mcpInputSchema, type ObjectJsonSchema } from "./json-schema.js";

/** A tool with everything derived from its definition, computed once. */
export interface RegisteredTool {
  definition: ToolDefinition;
  arguments: z.ZodType<{ action: string } & Record<string, unknown>>;
  inputSchema: ObjectJsonSchema;
}

/** The MCP `tools/list` entry of a tool. */
export interface McpToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: ObjectJsonSchema;
  annotations: { readOnlyHint: boolean };
}

/** The set of tools a surface offers (the caller-facing MCP endpoint, later the container path). */
export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #listing: McpToolListing[];

  constructor(definitions: readonly ToolDefinition[]) {
    for (const definition of definitions) {
      if (this.#tools.has(definition.name)) throw new Error(`tool ${definition.name} is defined twice`);
      this.#tools.set(definition.name, {
        definition,
        arguments: argumentsSchema(definition),
        inputSchema: mcpInputSchema(definition),
      });
    }
    this.#listing = [...this.#tools.values()].map(({ definition, inputSchema }) => ({
      name: definition.name,
      title: definition.title,
      description: definition.description,
      inputSchema,
      annotations: {
        readOnlyHint: Object.values(definition.actions).every((a: ActionDefinition) => a.access === "read"),
      },
    }));
  }

  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  /** The `tools/list` result. */
  list(): McpToolListing[] {
    return this.#listing;
  }
}
