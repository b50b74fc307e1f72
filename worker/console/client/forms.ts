import { h, labelled } from "./dom.js";
import { type ErrorSlot, errorSlot, guarded } from "./errors.js";
import { arr, isRecord, type JsonRecord, pretty, str, strings } from "./json.js";

/**
 * Forms built from a description of their fields (a tool's JSON Schema or a list of field
 * descriptors), not written by hand per field: a field the server adds shows up by itself.
 */
export type FieldKind = "text" | "number" | "integer" | "checkbox" | "select" | "json";

export interface FieldSpec {
  name: string;
  kind: FieldKind;
  options?: readonly string[];
  description?: string;
  default?: unknown;
  required?: boolean;
}

type Typed = { kind: FieldKind; options?: string[] };

/** The kind of control a JSON Schema (or descriptor) `type`/`enum` asks for. */
function kindOf(prop: JsonRecord): Typed {
  const options = strings(prop, "enum");
  if (options.length > 0 && options.length === arr(prop, "enum").length) return { kind: "select", options };
  // `T | null` (zod's nullable) is a T that may be left empty.
  const union = [...arr(prop, "anyOf"), ...arr(prop, "oneOf")].filter(isRecord);
  const nonNull = union.filter((option) => option.type !== "null");
  if (union.length > 0) {
    const only = nonNull[0];
    return nonNull.length === 1 && only ? kindOf(only) : { kind: "json" };
  }
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
  switch (type) {
    case "string":
      return { kind: "text" };
    case "number":
      return { kind: "number" };
    case "integer":
      return { kind: "integer" };
    case "boolean":
      return { kind: "checkbox" };
    default:
      return { kind: "json" };
  }
}

function spec(name: string, prop: JsonRecord, required: boolean): FieldSpec {
  const typed = kindOf(prop);
  const field: FieldSpec = { name, ...typed, required };
  const description = str(prop, "description");
  if (description !== null) field.description = description;
  if ("default" in prop) field.default = prop.default;
  return field;
}

/** Fields of an object JSON Schema's `properties`. */
export function fieldsFromJsonSchema(schema: unknown): FieldSpec[] {
  if (!isRecord(schema) || !isRecord(schema.properties)) return [];
  const required = new Set(strings(schema, "required"));
  return Object.entries(schema.properties).flatMap(([name, prop]) =>
    isRecord(prop) ? [spec(name, prop, required.has(name))] : [],
  );
}

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
type Collected = { ok: true; value: unknown } | { ok: false; message: string } | { ok: true; value?: never };

function control(field: FieldSpec): Control {
  const initial = field.default;
  switch (field.kind) {
    case "checkbox":
      return h("input", { type: "checkbox", name: field.name, checked: initial === true });
    case "select": {
      const select = h("select", { name: field.name });
      // An optional choice may be left to the server's default.
      if (!field.required || initial === undefined) select.append(h("option", { value: "" }, "(default)"));
      for (const option of field.options ?? []) {
        select.append(h("option", { value: option, selected: option === initial }, option));
      }
      return select;
    }
    case "json":
      return h("textarea", {
        name: field.name,
        rows: 3,
        spellcheck: false,
        value: initial === undefined ? "" : pretty(initial),
      });
    case "number":
    case "integer":
      return h("input", {
        type: "number",
        name: field.name,
        step: field.kind === "integer" ? "1" : "any",
        value: typeof initial === "number" ? String(initial) : "",
      });
    case "text":
      return h("input", {
        type: "text",
        name: field.name,
        autocomplete: "off",
        value: typeof initial === "string" ? initial : "",
      });
  }
}

/** A control's argument: absent when left empty or at its default (the server applies it). */
function collect(field: FieldSpec, el: Control): Collected {
  if (field.kind === "checkbox" && el instanceof HTMLInputElement) {
    return el.checked === (field.default === true) ? { ok: true } : { ok: true, value: el.checked };
  }
  const raw = el.value;
  if (raw.trim() === "") {
    return field.required ? { ok: false, message: `${field.name} is required` } : { ok: true };
  }
  switch (field.kind) {
    case "number":
    case "integer": {
      const value = Number(raw);
      if (!Number.isFinite(value) || (field.kind === "integer" && !Number.isInteger(value))) {
        return {
          ok: false,
          message: `${field.name}: not ${field.kind === "integer" ? "an integer" : "a number"}`,
        };
      }
      return value === field.default ? { ok: true } : { ok: true, value };
    }
    case "json": {
      if (field.default !== undefined && raw.trim() === pretty(field.default)) return { ok: true };
      try {
        return { ok: true, value: JSON.parse(raw) };
      } catch {
        return { ok: false, message: `${field.name}: not valid JSON` };
      }
    }
    default:
      return { ok: true, value: raw };
  }
}

export interface FieldForm {
  readonly el: HTMLFormElement;
  readonly errors: ErrorSlot;
}

/**
 * A form labelled `label` with one control per field (each labelled by the field's name, its
 * description as the hint) and a submit button. `onSubmit` gets the arguments the person gave.
 */
export function fieldForm(
  label: string,
  fields: readonly FieldSpec[],
  submitLabel: string,
  onSubmit: (args: JsonRecord) => Promise<void>,
): FieldForm {
  const errors = errorSlot();
  const controls = fields.map((field) => ({ field, el: control(field) }));
  const submit = h("button", { type: "submit" }, submitLabel);
  const form = h(
    "form",
    { "aria-label": label, class: "stack" },
    ...controls.map(({ field, el }) => labelled(field.name, el, field.description)),
    h("div", { class: "actions" }, submit),
    errors.el,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const args: JsonRecord = {};
    for (const { field, el } of controls) {
      const got = collect(field, el);
      if (!got.ok) {
        errors.show(got.message);
        el.focus();
        return;
      }
      if ("value" in got && got.value !== undefined) args[field.name] = got.value;
    }
    void guarded(errors, () => onSubmit(args), [submit]);
  });
  return { el: form, errors };
}
