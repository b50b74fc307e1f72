/**
 * Tool input schemas every agent runtime's model API takes. The CLIs pass an MCP tool's
 * `inputSchema` to their provider nearly as it is, and each provider takes a different part of
 * JSON Schema: Anthropic wants an object at the top with no `anyOf`/`oneOf`/`allOf` there; the
 * Gemini API's `parametersJsonSchema` knows `type, format, title, description, enum (strings and
 * numbers), items, minItems, maxItems, minimum, maximum, anyOf, oneOf, properties,
 * additionalProperties, required` and `$ref`/`$defs` (which fail in practice), and refuses the
 * rest; OpenAI (Codex, `strict: false`) wants an object. A schema outside the common part makes
 * one CLI drop the tool or its provider refuse the whole request, so the container-client serves
 * every tool (Oubliette's and the caller's) in that common part, made here:
 *
 * - references are inlined (cycles end in a plain object), `oneOf` becomes `anyOf`, `allOf` is
 *   merged, `const` becomes a one-value `enum`, a type list becomes its one non-null type (or an
 *   `anyOf`), a `null` branch of an `anyOf` goes;
 * - a `default` moves into the description (the model still reads it); other keywords are
 *   dropped (`pattern`, lengths, exclusive bounds, `propertyNames`, `$schema`, …): the arguments
 *   are still checked against the original schema where the call is served, so nothing is
 *   loosened but what the model is shown;
 * - the top is always `{type: "object", properties}`; alternatives there are merged into one set
 *   of optional properties.
 *
 * Written here rather than taken from a library: the converters on npm target one dialect (JSON
 * Schema to OpenAPI 3.0, or to one provider), not the intersection of three providers.
 */

type Schema = Record<string, unknown>;

/** Keywords kept as they are (after their values are made portable too). */
const KEPT = new Set([
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
/** String formats every provider takes. */
const FORMATS = new Set(["date-time"]);
/** How deep references are followed before a cycle is assumed. */
const MAX_DEPTH = 24;
const MAX_DEFAULT_CHARS = 80;

/** The portable form of a tool's input schema (always an object schema). */
export function portableSchema(input: unknown): Schema & { type: "object" } {
  const root = isSchema(input) ? input : {};
  const defs = { ...asSchema(root.definitions), ...asSchema(root.$defs) };
  const converted = convert(root, defs, 0);
  const merged = topLevelObject(converted);
  return { ...merged, type: "object" };
}

function convert(node: unknown, defs: Schema, depth: number): Schema {
  if (!isSchema(node)) return {};
  if (depth > MAX_DEPTH) return { type: "object", description: "(nested too deep to show)" };
  const ref = typeof node.$ref === "string" ? resolve(node.$ref, defs) : undefined;
  if (ref !== undefined) {
    const { $ref: _ref, ...rest } = node;
    return convert({ ...ref, ...rest }, defs, depth + 1);
  }
  if (Array.isArray(node.allOf)) {
    const { allOf, ...rest } = node;
    const parts = [rest, ...allOf.filter(isSchema)].map((part) => convert(part, defs, depth + 1));
    return convert(mergeAll(parts), defs, depth + 1);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (!KEPT.has(key)) continue;
    if (key === "properties") out.properties = mapValues(asSchema(value), (v) => convert(v, defs, depth + 1));
    else if (key === "items") out.items = convert(Array.isArray(value) ? value[0] : value, defs, depth + 1);
    else if (key === "anyOf") continue;
    else if (key === "additionalProperties")
      out.additionalProperties =
        typeof value === "boolean" ? value : isEmpty(value) ? true : convert(value, defs, depth + 1);
    else if (key === "format") {
      if (typeof value === "string" && FORMATS.has(value)) out.format = value;
    } else if (key === "enum") {
      const values = Array.isArray(value) ? value : [];
      if (values.length > 0 && values.every((v) => typeof v === "string" || typeof v === "number"))
        out.enum = values;
    } else if (key === "required") {
      if (Array.isArray(value)) out.required = value.filter((v): v is string => typeof v === "string");
    } else out[key] = value;
  }
  if ("const" in node && (typeof node.const === "string" || typeof node.const === "number"))
    out.enum = [node.const];
  const alternatives = [...list(node.anyOf), ...list(node.oneOf)].filter(isSchema);
  const chosen = alternatives.length > 0 ? alternativesOf(alternatives, defs, depth) : {};
  // One branch left stands for the node (what the node says itself wins).
  for (const [key, value] of Object.entries(chosen)) if (out[key] === undefined) out[key] = value;
  applyType(
    chosen.anyOf === undefined && chosen.type !== undefined ? (node.type ?? chosen.type) : node.type,
    out,
  );
  if (node.default !== undefined) out.description = withDefault(out.description, node.default);
  if (Array.isArray(out.required) && isSchema(out.properties)) {
    const names = new Set(Object.keys(out.properties));
    out.required = (out.required as string[]).filter((name) => names.has(name));
  }
  return out;
}

/** `anyOf`/`oneOf` as a portable `anyOf` without its `null` branch (one branch left: that branch). */
function alternativesOf(alternatives: Schema[], defs: Schema, depth: number): Schema {
  const branches = alternatives
    .filter((branch) => branch.type !== "null")
    .map((branch) => convert(branch, defs, depth + 1));
  if (branches.length === 0) return {};
  if (branches.length === 1) return branches[0] as Schema;
  return { anyOf: branches };
}

/** Gives `out` a portable `type`: one name, never `null`; a list becomes its one type or an `anyOf`; inferred when missing. */
function applyType(type: unknown, out: Schema): void {
  const names = (Array.isArray(type) ? type : type === undefined ? [] : [type]).filter(
    (t): t is string => typeof t === "string" && t !== "null",
  );
  delete out.type;
  if (names.length === 1) {
    out.type = names[0];
    return;
  }
  if (names.length > 1) {
    if (out.anyOf === undefined) out.anyOf = names.map((name) => ({ type: name }));
    return;
  }
  if (out.anyOf !== undefined) return;
  if (out.properties !== undefined) out.type = "object";
  else if (out.items !== undefined) out.type = "array";
  else if (Array.isArray(out.enum) && out.enum.length > 0)
    out.type = typeof out.enum[0] === "number" ? "number" : "string";
}

/** The top of a tool's schema: an object; alternatives there become one set of properties. */
function topLevelObject(schema: Schema): Schema {
  const branches = list(schema.anyOf).filter(isSchema);
  if (branches.length === 0) {
    const { type: _type, ...rest } = schema;
    return rest;
  }
  const { anyOf: _anyOf, type: _type, ...rest } = schema;
  const properties: Schema = { ...asSchema(rest.properties) };
  for (const branch of branches) Object.assign(properties, asSchema(branch.properties));
  // Only what every alternative requires is required of all.
  const requiredSets = branches.map(
    (b) => new Set(list(b.required).filter((r): r is string => typeof r === "string")),
  );
  const required = [...(requiredSets[0] ?? [])].filter((name) => requiredSets.every((set) => set.has(name)));
  const out: Schema = { ...rest, properties };
  if (required.length > 0) out.required = required;
  else delete out.required;
  return out;
}

/** Merges `allOf` parts: properties and required are joined, the first of anything else wins. */
function mergeAll(parts: Schema[]): Schema {
  const merged: Schema = {};
  const properties: Schema = {};
  const required: string[] = [];
  for (const part of parts) {
    Object.assign(properties, asSchema(part.properties));
    required.push(...list(part.required).filter((r): r is string => typeof r === "string"));
    for (const [key, value] of Object.entries(part)) {
      if (key !== "properties" && key !== "required" && merged[key] === undefined) merged[key] = value;
    }
  }
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required.length > 0) merged.required = [...new Set(required)];
  return merged;
}

function resolve(ref: string, defs: Schema): Schema | undefined {
  const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
  const name = match?.[1]?.replace(/~1/g, "/").replace(/~0/g, "~");
  const target = name === undefined ? undefined : defs[name];
  return isSchema(target) ? target : { type: "object" };
}

function withDefault(description: unknown, value: unknown): string {
  let shown = JSON.stringify(value) ?? String(value);
  if (shown.length > MAX_DEFAULT_CHARS) shown = `${shown.slice(0, MAX_DEFAULT_CHARS - 1)}…`;
  const text = typeof description === "string" && description !== "" ? `${description} ` : "";
  return `${text}Default: ${shown}.`;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isEmpty(value: unknown): boolean {
  return isSchema(value) && Object.keys(value).length === 0;
}

function asSchema(value: unknown): Schema {
  return isSchema(value) ? value : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function mapValues(record: Schema, fn: (value: unknown) => Schema): Schema {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}
