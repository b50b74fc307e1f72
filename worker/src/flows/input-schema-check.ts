/**
 * Checks that a caller tool's `inputSchema` is a valid JSON Schema (draft 2020-12, the MCP
 * default), so a broken schema is refused at declaration instead of breaking the droid's whole
 * `tools/list` later. The validator is @cfworker/json-schema (it runs in Workers: no code
 * generation); the meta-schemas are the official ones as shipped by ajv.
 *
 * @cfworker/json-schema does not follow `$dynamicRef`, which the 2020-12 meta-schemas use to
 * recurse into subschemas; for the standard meta-schema it always resolves to the root, so it is
 * rewritten to a plain `$ref` to it and nested schemas are checked too.
 */
import { type OutputUnit, Validator } from "@cfworker/json-schema";
import applicator from "ajv/dist/refs/json-schema-2020-12/meta/applicator.json";
import content from "ajv/dist/refs/json-schema-2020-12/meta/content.json";
import core from "ajv/dist/refs/json-schema-2020-12/meta/core.json";
import formatAnnotation from "ajv/dist/refs/json-schema-2020-12/meta/format-annotation.json";
import metaData from "ajv/dist/refs/json-schema-2020-12/meta/meta-data.json";
import unevaluated from "ajv/dist/refs/json-schema-2020-12/meta/unevaluated.json";
import validation from "ajv/dist/refs/json-schema-2020-12/meta/validation.json";
import root from "ajv/dist/refs/json-schema-2020-12/schema.json";

const ROOT_ID = "https://json-schema.org/draft/2020-12/schema";

function resolveDynamicRefs(schema: object): object {
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"$dynamicRef":"#meta"', `"$ref":"${ROOT_ID}"`),
  ) as object;
}

let validator: Validator | undefined;

function metaValidator(): Validator {
  if (validator) return validator;
  validator = new Validator(resolveDynamicRefs(root), "2020-12", false);
  for (const vocabulary of [applicator, content, core, formatAnnotation, metaData, unevaluated, validation]) {
    validator.addSchema(resolveDynamicRefs(vocabulary));
  }
  return validator;
}

/** Why `schema` is not a valid JSON Schema, in one line; null when it is. */
export function invalidJsonSchema(schema: unknown): string | null {
  const result = metaValidator().validate(schema);
  if (result.valid) return null;
  return describe(result.errors);
}

const WRAPPERS = new Set([
  "allOf",
  "anyOf",
  "oneOf",
  "$ref",
  "properties",
  "additionalProperties",
  "items",
  "prefixItems",
  "$defs",
]);

/** The most specific error: the deepest location, preferring a keyword that says what is wrong. */
function describe(errors: OutputUnit[]): string {
  let best: OutputUnit | undefined;
  for (const error of errors) {
    if (WRAPPERS.has(error.keyword)) continue;
    if (!best || depth(error) > depth(best) || (depth(error) === depth(best) && error.keyword === "enum"))
      best = error;
  }
  const chosen = best ?? errors[0];
  if (!chosen) return "not a valid JSON Schema";
  const where = chosen.instanceLocation.replace(/^#\/?/, "").replaceAll("/", ".") || "(root)";
  return `${where}: ${chosen.error}`;
}

function depth(error: OutputUnit): number {
  return error.instanceLocation.split("/").length;
}
