import { h, labelled } from "./dom.js";
import { type ErrorSlot, errorSlot, guarded } from "./errors.js";
import { arr, compact, isRecord, type JsonRecord, pretty, rec, str, strings } from "./json.js";

/**
 * Forms built from a description of their fields (a tool's JSON Schema or a list of field
 * descriptors), not written by hand per field: a field the server adds shows up by itself.
 */
export type FieldKind = "text" | "number" | "integer" | "checkbox" | "select" | "lines" | "json";

export interface FieldSpec {
  name: string;
  kind: FieldKind;
  options?: readonly string[];
  description?: string;
  default?: unknown;
  required?: boolean;
  /** `T | null`: emptying a field that had a value sends null. */
  nullable?: boolean;
  /** The field's own JSON Schema, for controls made for one shape (a network policy, say). */
  schema?: JsonRecord;
}

type Typed = { kind: FieldKind; options?: string[]; nullable?: boolean };

/** The kind of control a JSON Schema (or descriptor) `type`/`enum` asks for. */
function kindOf(prop: JsonRecord): Typed {
  const options = strings(prop, "enum");
  if (options.length > 0 && options.length === arr(prop, "enum").length) return { kind: "select", options };
  // `T | null` (zod's nullable) is a T that may be left empty.
  const union = [...arr(prop, "anyOf"), ...arr(prop, "oneOf")].filter(isRecord);
  const nonNull = union.filter((option) => option.type !== "null");
  if (union.length > 0) {
    const only = nonNull[0];
    const nullable = nonNull.length < union.length;
    return nonNull.length === 1 && only ? { ...kindOf(only), nullable } : { kind: "json", nullable };
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
    case "array": {
      // A list of plain strings is written one per line.
      const items = rec(prop, "items");
      return items && items.type === "string" && !("enum" in items) ? { kind: "lines" } : { kind: "json" };
    }
    default:
      return { kind: "json" };
  }
}

function spec(name: string, prop: JsonRecord, required: boolean): FieldSpec {
  const typed = kindOf(prop);
  const field: FieldSpec = { name, ...typed, required, schema: prop };
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
/** A control's argument: a value, absent (`{ok: true}`: the server's default or the value it has), or why not. */
export type Collected =
  | { ok: true; value: unknown }
  | { ok: false; message: string }
  | { ok: true; value?: never };

/**
 * A control made for one field's shape, in place of the generic one: it labels itself (a
 * `<fieldset>` and its legend) and answers its argument as the generic controls do.
 */
export interface CustomControl {
  readonly el: HTMLElement;
  collect(): Collected;
  focus(): void;
}

/** The non-empty lines of a text, each trimmed. */
export function lines(raw: string): string[] {
  return raw
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** Absent when `value` is the field's default (the server keeps or applies it), else the value. */
export function unlessDefault(field: FieldSpec, value: unknown): Collected {
  return field.default !== undefined && compact(value) === compact(field.default)
    ? { ok: true }
    : { ok: true, value };
}

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
    case "lines": {
      const items = Array.isArray(initial) ? initial.filter((item) => typeof item === "string") : [];
      return h("textarea", {
        name: field.name,
        rows: Math.min(10, Math.max(3, items.length + 1)),
        spellcheck: false,
        value: items.join("\n"),
      });
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
  if (raw.trim() === "") return emptied(field);
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
    case "lines":
      return unlessDefault(field, lines(raw));
    case "json": {
      if (field.default !== undefined && raw.trim() === pretty(field.default)) return { ok: true };
      try {
        return { ok: true, value: JSON.parse(raw) };
      } catch {
        return { ok: false, message: `${field.name}: not valid JSON` };
      }
    }
    default:
      return raw === field.default ? { ok: true } : { ok: true, value: raw };
  }
}

/**
 * An emptied control: required ones refuse; one that had a value (the project's own, in an edit
 * form) is cleared (null, "", []); otherwise it is left to the server.
 */
function emptied(field: FieldSpec): Collected {
  if (field.required) return { ok: false, message: `${field.name} is required` };
  const had = field.default;
  if (field.nullable && had !== null && had !== undefined) return { ok: true, value: null };
  if (field.kind === "text" && typeof had === "string" && had !== "") return { ok: true, value: "" };
  if (field.kind === "lines" && Array.isArray(had) && had.length > 0) return { ok: true, value: [] };
  return { ok: true };
}

export interface FieldForm {
  readonly el: HTMLFormElement;
  readonly errors: ErrorSlot;
}

/** The generic control of a field, as a CustomControl. */
function generic(field: FieldSpec): CustomControl {
  const el = control(field);
  return {
    el: labelled(field.name, el, field.description),
    collect: () => collect(field, el),
    focus: () => el.focus(),
  };
}

/**
 * A form labelled `label` with one control per field (each labelled by the field's name, its
 * description as the hint) and a submit button. `onSubmit` gets the arguments the person gave;
 * `custom` may make a field's control itself (null: the generic one). The server's refusal is
 * shown below the button.
 */
export function fieldForm(
  label: string,
  fields: readonly FieldSpec[],
  submitLabel: string,
  onSubmit: (args: JsonRecord) => Promise<void>,
  custom: (field: FieldSpec) => CustomControl | null = () => null,
): FieldForm {
  const errors = errorSlot();
  const controls = fields.map((field) => ({ field, control: custom(field) ?? generic(field) }));
  const submit = h("button", { type: "submit" }, submitLabel);
  const form = h(
    "form",
    { "aria-label": label, class: "stack" },
    ...controls.map(({ control }) => control.el),
    h("div", { class: "actions" }, submit),
    errors.el,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const args: JsonRecord = {};
    for (const { field, control } of controls) {
      const got = control.collect();
      if (!got.ok) {
        errors.show(got.message);
        control.focus();
        return;
      }
      if ("value" in got && got.value !== undefined) args[field.name] = got.value;
    }
    void guarded(errors, () => onSubmit(args), [submit]);
  });
  return { el: form, errors };
}
