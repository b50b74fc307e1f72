import { h, labelled } from "./dom.js";
import { type CustomControl, type FieldSpec, lines, unlessDefault } from "./forms.js";
import { isRecord, type JsonRecord, rec, str, strings } from "./json.js";

/**
 * The editor of a network policy (protocol/network.ts `NetworkPolicySchema`: a project's
 * `network` and `setup_network`): its mode, its allow entries one per line, its presets and its
 * methods as checkboxes. What it offers comes from the field's JSON Schema (the modes, presets and
 * methods the server accepts) and `project options` (what each preset opens); the server checks
 * every entry and its refusal names the one it refused.
 */

/** What each preset opens, by name (`project options` network.presets). */
export type PresetNotes = Record<string, string>;

/** The presets' descriptions from `project options`' answer. */
export function presetNotes(options: JsonRecord): PresetNotes {
  const presets = rec(rec(options, "network") ?? {}, "presets") ?? {};
  const notes: PresetNotes = {};
  for (const [name, preset] of Object.entries(presets)) {
    if (!isRecord(preset)) continue;
    const hosts = strings(preset, "hosts");
    notes[name] = `${str(preset, "description") ?? ""}${hosts.length > 0 ? ` (${hosts.length} hosts)` : ""}`;
  }
  return notes;
}

/** The schema of a network policy's property `key`, if the field is an object that has it. */
function property(field: FieldSpec, key: string): JsonRecord | null {
  const properties = field.schema ? rec(field.schema, "properties") : null;
  return properties ? rec(properties, key) : null;
}

/** Whether a field is a network policy: an object with a `mode` and an `allow` list. */
export function isNetworkPolicy(field: FieldSpec): boolean {
  return property(field, "mode") !== null && property(field, "allow") !== null;
}

/** The choices an array property's items may take (its items' `enum`). */
function choices(field: FieldSpec, key: string): string[] {
  const items = rec(property(field, key) ?? {}, "items");
  return items ? strings(items, "enum") : [];
}

function description(field: FieldSpec, key: string): string | undefined {
  return str(property(field, key) ?? {}, "description") ?? undefined;
}

/** A group of checkboxes named `legend`, one per choice, those in `checked` ticked. */
function checkboxes(
  legend: string,
  names: readonly string[],
  checked: readonly string[],
  hint: (name: string) => string | undefined,
  note?: string,
): { el: HTMLFieldSetElement; value(): string[]; first(): HTMLInputElement | null } {
  const boxes = names.map((name) => ({
    name,
    box: h("input", { type: "checkbox", name: legend, value: name, checked: checked.includes(name) }),
  }));
  // Choices without a note of their own sit in one row, each box inside its label.
  const described = names.some((name) => hint(name) !== undefined);
  const el = h(
    "fieldset",
    { class: "choices" },
    h("legend", {}, legend),
    note ? h("small", { class: "hint" }, note) : null,
    ...(described
      ? boxes.map(({ name, box }) => labelled(name, box, hint(name)))
      : [h("div", { class: "actions" }, ...boxes.map(({ name, box }) => h("label", {}, box, ` ${name}`)))]),
  );
  return {
    el,
    value: () => boxes.filter(({ box }) => box.checked).map(({ name }) => name),
    first: () => boxes[0]?.box ?? null,
  };
}

/** The policy a field starts from: its default (the project's own, when editing), else off. */
function initialPolicy(field: FieldSpec): {
  mode: string;
  allow: string[];
  presets: string[];
  methods: string[];
} {
  const value = isRecord(field.default) ? field.default : {};
  return {
    mode: str(value, "mode") ?? "off",
    allow: strings(value, "allow"),
    presets: strings(value, "presets"),
    methods: strings(value, "methods"),
  };
}

/** The network policy editor for `field`, as one labelled group. */
export function networkEditor(field: FieldSpec, presets: PresetNotes): CustomControl {
  const initial = initialPolicy(field);
  const modes = strings(property(field, "mode") ?? {}, "enum");
  const mode = h(
    "select",
    { name: `${field.name}.mode` },
    ...(modes.length > 0 ? modes : [initial.mode]).map((m) =>
      h("option", { value: m, selected: m === initial.mode }, m),
    ),
  );
  const allow = h("textarea", {
    name: `${field.name}.allow`,
    rows: Math.min(10, Math.max(3, initial.allow.length + 1)),
    spellcheck: false,
    placeholder: "registry.npmjs.org\n*.example.com:443",
    value: initial.allow.join("\n"),
  });
  const allowItems = rec(property(field, "allow") ?? {}, "items");
  const presetBoxes = checkboxes(
    "presets",
    choices(field, "presets"),
    initial.presets,
    (name) => presets[name],
  );
  const methodBoxes = checkboxes(
    "methods",
    choices(field, "methods"),
    initial.methods,
    () => undefined,
    `${description(field, "methods") ?? ""} None ticked: any method.`.trim(),
  );
  const el = h(
    "fieldset",
    { class: "policy" },
    h("legend", {}, field.name),
    labelled("mode", mode, description(field, "mode")),
    labelled("allow", allow, `One per line. ${(allowItems && str(allowItems, "description")) ?? ""}`.trim()),
    presetBoxes.el,
    methodBoxes.el,
  );
  return {
    el,
    collect: () => {
      const methods = methodBoxes.value();
      const policy: JsonRecord = {
        mode: mode.value,
        allow: lines(allow.value),
        presets: presetBoxes.value(),
      };
      if (methods.length > 0) policy.methods = methods;
      const from: JsonRecord = { mode: initial.mode, allow: initial.allow, presets: initial.presets };
      if (initial.methods.length > 0) from.methods = initial.methods;
      // Compared with what the field started from, written the same way: unchanged is absent.
      return unlessDefault({ ...field, default: field.default === undefined ? undefined : from }, policy);
    },
    focus: () => mode.focus(),
  };
}
