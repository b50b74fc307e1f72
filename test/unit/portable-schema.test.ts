/**
 * Tool schemas in the part of JSON Schema every runtime's model API takes (protocol/portable-schema.ts).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { portableSchema } from "../../protocol/portable-schema.js";
import { isContainerClientTool, toolSchemaProblem } from "../fixtures/fake-model/tool-rules.js";

/** The keywords any schema node of the result may use. */
const ALLOWED = new Set([
  "type",
  "title",
  "description",
  "enum",
  "items",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "format",
]);

/** Every keyword used anywhere in a schema (property names are not keywords). */
function keywords(node: unknown, into = new Set<string>()): Set<string> {
  if (typeof node !== "object" || node === null) return into;
  if (Array.isArray(node)) {
    for (const item of node) keywords(item, into);
    return into;
  }
  for (const [key, value] of Object.entries(node)) {
    into.add(key);
    if (key === "properties") for (const child of Object.values(value as object)) keywords(child, into);
    else if (key !== "enum" && key !== "required") keywords(value, into);
  }
  return into;
}

describe("portableSchema", () => {
  it("keeps only the common keywords, and says a default in the description", () => {
    const schema = z.toJSONSchema(
      z
        .object({
          project_id: z
            .string()
            .regex(/^prj_[0-9a-f]{24}$/)
            .describe("Project id."),
          wait_seconds: z.number().int().positive().max(50).default(0).describe("How long to wait."),
          url: z.url().optional(),
          at: z.iso.datetime().optional(),
          kind: z.literal("fixed"),
          limits: z.object({ disk_mb: z.number().int().min(64).nullable().default(null) }).strict(),
          context: z.record(z.string(), z.unknown()).optional(),
        })
        .strict(),
      { io: "input" },
    );
    const out = portableSchema(schema);
    expect([...keywords(out)].filter((k) => !ALLOWED.has(k))).toEqual([]);
    expect(out.type).toBe("object");
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.project_id).toEqual({ type: "string", description: "Project id." });
    expect(props.wait_seconds).toMatchObject({
      type: "integer",
      maximum: 50,
      description: "How long to wait. Default: 0.",
    });
    expect(props.url).toEqual({ type: "string" });
    expect(props.at).toEqual({ type: "string", format: "date-time" });
    expect(props.kind).toEqual({ type: "string", enum: ["fixed"] });
    // The null branch of a nullable goes; what is left stands for the property.
    expect((props.limits as { properties: Record<string, unknown> }).properties.disk_mb).toMatchObject({
      type: "integer",
      minimum: 64,
      description: "Default: null.",
    });
    expect(props.context).toMatchObject({ type: "object", additionalProperties: true });
    expect(out.required).toEqual(expect.arrayContaining(["project_id", "kind", "limits"]));
  });

  it("inlines references (a cycle ends in a plain object) and merges allOf", () => {
    const out = portableSchema({
      type: "object",
      $defs: {
        Node: { type: "object", properties: { name: { type: "string" }, child: { $ref: "#/$defs/Node" } } },
        Named: { properties: { name: { type: "string" } }, required: ["name"] },
      },
      properties: {
        tree: { $ref: "#/$defs/Node" },
        both: { allOf: [{ $ref: "#/$defs/Named" }, { properties: { age: { type: "integer" } } }] },
      },
    });
    expect([...keywords(out)].filter((k) => !ALLOWED.has(k))).toEqual([]);
    const tree = (out.properties as Record<string, Record<string, unknown>>).tree;
    expect(tree).toMatchObject({ type: "object", properties: { name: { type: "string" } } });
    expect((out.properties as Record<string, unknown>).both).toEqual({
      type: "object",
      properties: { name: { type: "string" }, age: { type: "integer" } },
      required: ["name"],
    });
    expect(JSON.stringify(out)).not.toContain("$ref");
  });

  it("makes a top-level choice one object whose shared requirements stay required", () => {
    const out = portableSchema({
      oneOf: [
        {
          type: "object",
          properties: { id: { type: "string" }, a: { type: "number" } },
          required: ["id", "a"],
        },
        { type: "object", properties: { id: { type: "string" }, b: { type: "boolean" } }, required: ["id"] },
      ],
    });
    expect(out).toEqual({
      type: "object",
      properties: { id: { type: "string" }, a: { type: "number" }, b: { type: "boolean" } },
      required: ["id"],
    });
  });

  it("turns type lists and nested oneOf into portable forms, and drops enums of booleans", () => {
    const out = portableSchema({
      type: "object",
      properties: {
        maybe: { type: ["string", "null"] },
        either: { type: ["string", "number"] },
        pick: { oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
        flag: { type: "boolean", enum: [true] },
        tuple: { type: "array", items: [{ type: "string" }, { type: "number" }] },
      },
      required: ["maybe", "missing"],
    });
    expect(out.properties).toEqual({
      maybe: { type: "string" },
      either: { anyOf: [{ type: "string" }, { type: "number" }] },
      pick: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
      flag: { type: "boolean" },
      tuple: { type: "array", items: { type: "string" } },
    });
    // Only properties that exist may be required.
    expect(out.required).toEqual(["maybe"]);
  });

  it("gives a schema-less tool a bare object schema", () => {
    expect(portableSchema(undefined)).toEqual({ type: "object" });
    expect(portableSchema({ type: "object" })).toEqual({ type: "object" });
  });
});

describe("the providers' rules (the fake model refuses what they would)", () => {
  const asTool = (name: string, schema: unknown) => ({ name, description: "", schema });
  it("refuse what their APIs refuse", () => {
    const choice = { type: "object", anyOf: [{ type: "object" }, { type: "object" }] };
    expect(toolSchemaProblem("anthropic", asTool("mcp__oubliette__x", choice), 0)).toMatch(/top level/);
    expect(toolSchemaProblem("responses", asTool("x", { type: "string" }), 0)).toMatch(/type: "object"/);
    expect(
      toolSchemaProblem(
        "gemini",
        asTool("mcp_oubliette_x", { type: "object", properties: { a: { type: "string", pattern: "^a" } } }),
        3,
      ),
    ).toMatch(/Unknown name "pattern"/);
    expect(
      toolSchemaProblem(
        "gemini",
        asTool("mcp_oubliette_x", { type: "object", properties: { a: { $ref: "#/$defs/A" } } }),
        0,
      ),
    ).toMatch(/undefined schema/);
    expect(isContainerClientTool(asTool("run_shell_command", {}))).toBe(false);
    expect(isContainerClientTool({ ...asTool("lookup", {}), namespace: "mcp__oubliette" })).toBe(true);
  });
});
