import { callObject } from "../api.js";
import { fieldForm, fieldsFromJsonSchema } from "../forms.js";
import { str } from "../json.js";

/**
 * The "New project" form, built from `project options`' `create_schema` (the JSON Schema of the
 * same zod schema that checks `project create`), so a field added there shows up here by itself.
 */
export async function newProjectForm(onCreated: (projectId: string) => void): Promise<HTMLFormElement> {
  const options = await callObject("project", { action: "options" });
  const fields = fieldsFromJsonSchema(options.create_schema);
  if (fields.length === 0) throw new Error("project options did not describe the create fields");
  return fieldForm("New project", fields, "Create project", async (args) => {
    const created = await callObject("project", { action: "create", ...args });
    const id = str(created, "project_id");
    if (id !== null) onCreated(id);
  }).el;
}
