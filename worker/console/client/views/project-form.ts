import { actionSchema, callObject } from "../api.js";
import { type CustomControl, type FieldSpec, fieldForm, fieldsFromJsonSchema } from "../forms.js";
import { type JsonRecord, str } from "../json.js";
import { isNetworkPolicy, networkEditor, type PresetNotes, presetNotes } from "../network-editor.js";
import { isCommandList, setupEditor } from "../setup-editor.js";

/**
 * The project forms: "New project", built from `project options`' `create_schema` (the JSON
 * Schema of the same zod schema that checks `project create`), and "Project settings", built from
 * `project update`'s own schema with the project's values filled in. A field added there shows up
 * here by itself; network policies and setup steps get editors of their own instead of raw JSON.
 * The server checks everything: its refusal (naming the bad entry, `network.allow.2: …`) is shown
 * below the form, and a refused update changes nothing.
 */

/** Network policies and setup steps get their editors; other fields the generic controls. */
function projectControls(presets: PresetNotes): (field: FieldSpec) => CustomControl | null {
  return (field) => {
    if (isNetworkPolicy(field)) return networkEditor(field, presets);
    if (isCommandList(field)) return setupEditor(field);
    return null;
  };
}

export async function newProjectForm(onCreated: (projectId: string) => void): Promise<HTMLFormElement> {
  const options = await callObject("project", { action: "options" });
  const fields = fieldsFromJsonSchema(options.create_schema);
  if (fields.length === 0) throw new Error("project options did not describe the create fields");
  return fieldForm(
    "New project",
    fields,
    "Create project",
    async (args) => {
      const created = await callObject("project", { action: "create", ...args });
      const id = str(created, "project_id");
      if (id !== null) onCreated(id);
    },
    projectControls(presetNotes(options)),
  ).el;
}

/** Fields of `project update` the form leaves out: which project is the page's. */
const NOT_SETTINGS = new Set(["project_id", "action"]);

/**
 * The "Project settings" form of project `info` (its `project get`): each setting `project
 * update` takes, starting from the project's value; only what the person changed is sent.
 */
export async function editProjectForm(
  projectId: string,
  info: JsonRecord,
  onSaved: (info: JsonRecord) => void,
): Promise<HTMLFormElement> {
  const [schema, options] = await Promise.all([
    actionSchema("project", "update"),
    callObject("project", { action: "options" }),
  ]);
  const fields = fieldsFromJsonSchema(schema)
    .filter((field) => !NOT_SETTINGS.has(field.name))
    .map((field) => ({
      ...field,
      required: false,
      ...(field.name in info ? { default: info[field.name] } : {}),
    }));
  if (fields.length === 0) throw new Error("project update did not describe its fields");
  return fieldForm(
    "Project settings",
    fields,
    "Save settings",
    async (args) => {
      if (Object.keys(args).length === 0) throw new Error("Nothing to save: no setting was changed.");
      onSaved(await callObject("project", { action: "update", project_id: projectId, ...args }));
    },
    projectControls(presetNotes(options)),
  ).el;
}
