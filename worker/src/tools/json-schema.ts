import { z } from "zod";
import type { ToolDefinition } from "./define.js";

/** A JSON Schema object as MCP `tools/list` carries it (`type` is always "object"). */
export interface ObjectJsonSchema {
  type: "object";
  properties?: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
}

/** The JSON Schema (draft 2020-12, input side) of an object schema. */
export function toJsonSchema(schema: z.ZodType): ObjectJsonSchema {
  const json = z.toJSONSchema(schema, {
    io: "input",
    unrepresentable: "any",
    target: "draft-2020-12",
  }) as Record<string, unknown>;
  delete json.$schema;
  if (json.type !== "object") throw new Error("tool input schemas must be objects");
  return json as ObjectJsonSchema;
}

/**
 * The MCP input schema of a tool. For unified tools the per-action schemas are flattened into
 * one object schema (an `action` enum plus every action's properties, each annotated with the
 * actions that use it), because many MCP clients reject top-level `oneOf`. Validation still uses
 * the exact per-action schema (`argumentsSchema`).
 */
export function mcpInputSchema(tool: ToolDefinition): ObjectJsonSchema {
  if (tool.single !== undefined) {
    const only = tool.actions[tool.single];
    if (!only) throw new Error(`tool ${tool.name} has no action ${tool.single}`);
    return toJsonSchema(only.input.strict());
  }
  const properties: Record<string, Record<string, unknown>> = {};
  const usedBy: Record<string, string[]> = {};
  const requiredBy: Record<string, string[]> = {};
  const actionNames = Object.keys(tool.actions);
  for (const [name, def] of Object.entries(tool.actions)) {
    const schema = toJsonSchema(def.input);
    for (const [prop, propSchema] of Object.entries(schema.properties ?? {})) {
      properties[prop] ??= propSchema;
      usedBy[prop] = [...(usedBy[prop] ?? []), name];
    }
    for (const prop of schema.required ?? []) requiredBy[prop] = [...(requiredBy[prop] ?? []), name];
  }
  for (const [prop, actions] of Object.entries(usedBy)) {
    const schema = properties[prop];
    if (!schema) continue;
    const required = requiredBy[prop] ?? [];
    const note =
      actions.length === actionNames.length
        ? required.length === actionNames.length
          ? "Required."
          : ""
        : `Used by: ${actions.join(", ")}${required.length ? `; required by: ${required.join(", ")}` : ""}.`;
    const description = [schema.description, note].filter(Boolean).join(" ");
    if (description) schema.description = description;
  }
  const actionDescriptions = Object.entries(tool.actions)
    .map(([name, def]) => `${name}: ${def.description}`)
    .join("\n");
  return {
    type: "object",
    properties: {
      action: { type: "string", enum: actionNames, description: `What to do.\n${actionDescriptions}` },
      ...properties,
    },
    required: ["action"],
    additionalProperties: false,
  };
}
