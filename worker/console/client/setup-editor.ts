import { h, labelled } from "./dom.js";
import { type CustomControl, type FieldSpec, lines, unlessDefault } from "./forms.js";
import { arr, isRecord, rec } from "./json.js";

/**
 * The editor of a project's setup steps (protocol/setup.ts `SetupStepsSchema`): one step per
 * line, each a shell command (`/bin/sh -c`). A step the project holds as an argv shows as a JSON
 * array of strings, and a line written so stays an argv: editing other lines never turns it into
 * a shell command.
 */

/** Whether a field is a list of commands: an array whose items are a string or an array of strings. */
export function isCommandList(field: FieldSpec): boolean {
  const items = field.schema ? rec(field.schema, "items") : null;
  if (field.schema?.type !== "array" || !items) return false;
  const kinds = arr(items, "anyOf")
    .filter(isRecord)
    .map((option) => option.type);
  return kinds.includes("string") && kinds.includes("array");
}

/** A step as a line: the command, or an argv as a JSON array. */
function stepLine(step: unknown): string | null {
  if (typeof step === "string") return step;
  if (Array.isArray(step) && step.every((part) => typeof part === "string")) return JSON.stringify(step);
  return null;
}

/** A line as a step: a JSON array of strings is an argv, anything else a shell command. */
function lineStep(line: string): string | string[] {
  if (!line.startsWith("[")) return line;
  try {
    const parsed: unknown = JSON.parse(line);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every((part) => typeof part === "string"))
      return parsed;
  } catch {
    // Not JSON: a shell command that happens to start with "[" (`[ -f x ] && …`).
  }
  return line;
}

/** The setup steps editor for `field`: a textarea, one step per line. */
export function setupEditor(field: FieldSpec): CustomControl {
  const steps = (Array.isArray(field.default) ? field.default : [])
    .map(stepLine)
    .filter((line): line is string => line !== null);
  const area = h("textarea", {
    name: field.name,
    rows: Math.min(12, Math.max(3, steps.length + 1)),
    spellcheck: false,
    placeholder: "npm ci\nnpm run build",
    value: steps.join("\n"),
  });
  return {
    el: labelled(
      field.name,
      area,
      'One step per line, each a shell command (run with /bin/sh -c, in order, before a new workspace\'s first agent). A line written as a JSON array, ["npm","ci"], runs that argv without a shell.',
    ),
    collect: () => unlessDefault(field, lines(area.value).map(lineStep)),
    focus: () => area.focus(),
  };
}
