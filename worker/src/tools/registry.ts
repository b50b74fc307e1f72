import type { z } from "zod";
import { readsOnly } from "../auth/scopes.js";
import { describeTiming, type Timing } from "../jobs/timing.js";
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
  /** `oubliette/timing`: each action's timing class (define.ts), keyed by action name. */
  _meta: { [TIMING_META]: Record<string, Timing> };
}

/** Where a tool listing gives its actions' timing classes. */
export const TIMING_META = "oubliette/timing";

/**
 * The timing of a tool's actions in words, for its description: the classes other than sync,
 * each with the actions that have it (every action of a standalone tool).
 */
export function timingNote(definition: ToolDefinition): string {
  const byClass = new Map<Timing, string[]>();
  for (const [name, def] of Object.entries(definition.actions)) {
    const label = def.noWait ? `${name} (async_long when asked not to wait)` : name;
    byClass.set(def.timing, [...(byClass.get(def.timing) ?? []), label]);
  }
  const jobs = [...byClass].filter(([timing]) => timing !== "sync");
  if (jobs.length === 0) return "";
  if (definition.single !== undefined) return ` Timing: ${describeTiming(jobs[0]?.[0] ?? "sync")}.`;
  const parts = jobs.map(([timing, names]) => `${names.join(", ")}: ${describeTiming(timing)}`);
  return ` Timing: ${parts.join("; ")}${byClass.has("sync") ? "; the other actions sync" : ""}.`;
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
      description: definition.description + timingNote(definition),
      inputSchema,
      annotations: {
        readOnlyHint: Object.values(definition.actions).every((a: ActionDefinition) => readsOnly(a.access)),
      },
      _meta: {
        [TIMING_META]: Object.fromEntries(Object.entries(definition.actions).map(([n, a]) => [n, a.timing])),
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
