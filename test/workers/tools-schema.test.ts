import { describe, expect, it } from "vitest";
import { z } from "zod";
import { portableSchema } from "../../protocol/portable-schema.js";
import { callerTools, toolDefinitions } from "../../worker/src/tools/catalog.js";
import { action, argumentsSchema, defineActionTool, defineTool } from "../../worker/src/tools/define.js";
import { droidToolList } from "../../worker/src/tools/droid-tools.js";
import { mcpInputSchema } from "../../worker/src/tools/json-schema.js";
import { ToolRegistry } from "../../worker/src/tools/registry.js";
import { toolSchemaProblem } from "../fixtures/fake-model/tool-rules.js";

const noop = async () => ({});

const thing = defineActionTool({
  name: "thing",
  title: "Things",
  description: "Test.",
  actions: {
    list: action({
      description: "List them.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: "p" },
      input: z.object({ project_id: z.string().describe("The project.") }),
      handler: noop,
    }),
    delete: action({
      description: "Delete one.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { project_id: "p", id: "x" },
      input: z.object({ project_id: z.string().describe("The project."), id: z.string().describe("Which.") }),
      handler: noop,
    }),
  },
});

const single = defineTool({
  name: "single",
  title: "Single",
  description: "Test.",
  action: {
    description: "One.",
    access: "read",
    target: "global",
    timing: "sync",
    example: { a: "x" },
    input: z.object({ a: z.string(), b: z.number().optional() }),
    handler: noop,
  },
});

describe("mcpInputSchema", () => {
  it("flattens a unified tool into one object with an action enum", () => {
    const schema = mcpInputSchema(thing);
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual(["action"]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties?.action).toMatchObject({ type: "string", enum: ["list", "delete"] });
    expect(String(schema.properties?.action?.description)).toContain("delete: Delete one.");
    expect(schema.properties?.project_id).toMatchObject({
      type: "string",
      description: "The project. Required.",
    });
    expect(schema.properties?.id).toMatchObject({
      description: "Which. Used by: delete; required by: delete.",
    });
  });

  it("gives a standalone tool its exact object schema", () => {
    const schema = mcpInputSchema(single);
    expect(schema).toMatchObject({ type: "object", required: ["a"], additionalProperties: false });
    expect(Object.keys(schema.properties ?? {})).toEqual(["a", "b"]);
  });
});

describe("argumentsSchema", () => {
  it("validates a unified tool per action", () => {
    const schema = argumentsSchema(thing);
    expect(schema.safeParse({ action: "list", project_id: "p" }).success).toBe(true);
    expect(schema.safeParse({ action: "delete", project_id: "p" }).success).toBe(false);
    expect(schema.safeParse({ action: "list", project_id: "p", id: "x" }).success).toBe(false);
    expect(schema.safeParse({ action: "explode", project_id: "p" }).success).toBe(false);
  });

  it("names a standalone tool's action after the tool", () => {
    const parsed = argumentsSchema(single).safeParse({ a: "x" });
    expect(parsed.success && parsed.data).toEqual({ a: "x", action: "single" });
  });
});

describe("ToolRegistry", () => {
  it("refuses a tool defined twice", () => {
    expect(() => new ToolRegistry([single, single])).toThrow(/defined twice/);
  });

  it("lists tools with readOnlyHint only when every action reads", () => {
    const listing = new ToolRegistry([thing, single]).list();
    expect(listing.map((t) => [t.name, t.annotations.readOnlyHint])).toEqual([
      ["thing", false],
      ["single", true],
    ]);
  });
});

describe("Oubliette's tools as droids see them", () => {
  const protocols = ["anthropic", "chat", "responses", "gemini"] as const;
  const asTool = (name: string, schema: unknown) => ({ name, description: "", schema });
  const adminTools = droidToolList({ kind: "caller", tokenId: "t", scopes: ["admin"] });

  it("are taken by every provider's API once portable; Gemini's refuses some as they are", () => {
    expect(adminTools.length).toBeGreaterThan(5);
    for (const protocol of protocols) {
      for (const [i, tool] of adminTools.entries()) {
        const portable = portableSchema(tool.inputSchema);
        const problem = toolSchemaProblem(protocol, asTool(`oubliette_${tool.name}`, portable), i);
        expect({ protocol, tool: tool.name, problem }).toEqual({ protocol, tool: tool.name, problem: null });
      }
    }
    const raw = adminTools.map((tool, i) =>
      toolSchemaProblem("gemini", asTool(`oubliette_${tool.name}`, tool.inputSchema), i),
    );
    expect(raw.some((problem) => problem !== null)).toBe(true);
  });
});

/** The parts of a JSON Schema node the walk below looks at. */
const NodeSchema = z.looseObject({
  properties: z.record(z.string(), z.unknown()).optional(),
  additionalProperties: z.unknown().optional(),
  items: z.unknown().optional(),
  anyOf: z.array(z.unknown()).default([]),
  oneOf: z.array(z.unknown()).default([]),
  allOf: z.array(z.unknown()).default([]),
});

/** The paths of the objects with named properties that accept other keys too. */
function openObjects(node: unknown, path: string): string[] {
  const parsed = NodeSchema.safeParse(node);
  if (!parsed.success) return [];
  const { properties, additionalProperties, items, anyOf, oneOf, allOf } = parsed.data;
  const open = properties !== undefined && additionalProperties !== false ? [path] : [];
  return [
    ...open,
    ...Object.entries(properties ?? {}).flatMap(([name, sub]) => openObjects(sub, `${path}.${name}`)),
    ...openObjects(additionalProperties, `${path}.*`),
    ...openObjects(items, `${path}[]`),
    ...[...anyOf, ...oneOf, ...allOf].flatMap((sub) => openObjects(sub, path)),
  ];
}

describe("the catalogue's input schemas", () => {
  it("close every object whose keys are ours; only a caller tool's inputSchema (the caller's own JSON Schema) stays open", () => {
    // Each action alone: the flattened listing keeps one schema per property name.
    const open = toolDefinitions.flatMap((tool) =>
      Object.entries(tool.actions).flatMap(([name, only]) =>
        openObjects(mcpInputSchema({ ...tool, actions: { [name]: only } }), `${tool.name}.${name}`),
      ),
    );
    expect(open).toEqual(
      ["spawn", "message"].flatMap((name) => [
        `session.${name}.caller_tools[].inputSchema`,
        `session.${name}.context.caller_tools[].inputSchema`,
      ]),
    );
  });

  it("refuses an unknown key in a nested object like one at the top", () => {
    const project = callerTools.get("project")?.arguments;
    const parsed = project?.safeParse({ action: "create", name: "x", limits: { disk_mbb: 1 } });
    expect(parsed?.error?.issues).toMatchObject([
      { code: "unrecognized_keys", path: ["limits"], keys: ["disk_mbb"] },
    ]);
  });
});
