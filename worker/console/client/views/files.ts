import { callObject } from "../api.js";
import { h, link, replace } from "../dom.js";
import { errorSlot, messageOf } from "../errors.js";
import { bool, type JsonRecord, list, str } from "../json.js";
import { heading, type View } from "../view.js";

/**
 * A workspace's files, read-only (`workspace files` / `workspace read`, project read access).
 * The route carries the place after the workspace id: `?path=<dir>` lists a directory,
 * `?file=<path>` lists the file's directory and shows the file; the value is one
 * encodeURIComponent, which the router's decoding of the whole hash undoes.
 */
interface Entry {
  name: string;
  type: "file" | "dir";
}

function parseEntry(r: JsonRecord): Entry | null {
  const name = str(r, "name");
  const type = str(r, "type");
  if (name === null || name === "") return null;
  return type === "file" || type === "dir" ? { name, type } : null;
}

/** Directories first, then files, each by name. */
function byKindThenName(a: Entry, b: Entry): number {
  if (a.type !== b.type) return a.type === "dir" ? -1 : 1;
  return a.name.localeCompare(b.name);
}

/** A path's segments, without empty and "." ones: "./src//lib/" → ["src", "lib"]. */
function segments(path: string): string[] {
  return path.split("/").filter((s) => s !== "" && s !== ".");
}

/** The route of a workspace's directory (the root when `dir` is empty or "."). */
export function filesHash(projectId: string, workspaceId: string, dir = "."): string {
  const base = `#/projects/${projectId}/files/${workspaceId}`;
  const path = segments(dir).join("/");
  return path === "" ? base : `${base}?path=${encodeURIComponent(path)}`;
}

function fileHash(projectId: string, workspaceId: string, file: string): string {
  return `#/projects/${projectId}/files/${workspaceId}?file=${encodeURIComponent(file)}`;
}

/** Links to the workspace root and to each directory down to `dir` (marked as the current one). */
function breadcrumb(projectId: string, workspaceId: string, dir: string[]): HTMLElement {
  const crumb = (label: string, depth: number) => {
    const a = link(label, filesHash(projectId, workspaceId, dir.slice(0, depth).join("/")));
    if (depth === dir.length) a.setAttribute("aria-current", "page");
    return h("li", {}, a);
  };
  return h(
    "nav",
    { "aria-label": "Path", class: "breadcrumb" },
    h("ol", {}, crumb(workspaceId, 0), ...dir.map((name, i) => crumb(name, i + 1))),
  );
}

/** The file's text under its path; "(truncated)" when the server cut it short. */
function fileSection(
  projectId: string,
  workspaceId: string,
  path: string,
  isLive: () => boolean,
): HTMLElement {
  const title = h("h2", {}, path);
  title.tabIndex = -1;
  const content = h("pre", { "aria-label": "File content", class: "file-content" });
  // A long file scrolls inside the <pre>, so it must take keyboard focus.
  content.tabIndex = 0;
  const note = h("p", { class: "muted", hidden: true });
  const errors = errorSlot();
  callObject("workspace", { action: "read", project_id: projectId, workspace_id: workspaceId, path }).then(
    (answer) => {
      if (!isLive()) return;
      const text = str(answer, "content") ?? "";
      content.textContent = text;
      const notes = [text === "" ? "(empty file)" : "", bool(answer, "truncated") ? "(truncated)" : ""];
      note.textContent = notes.filter(Boolean).join(" ");
      note.hidden = note.textContent === "";
      title.focus();
    },
    (err: unknown) => {
      if (isLive()) errors.show(messageOf(err));
    },
  );
  return h("section", { class: "file" }, title, errors.el, content, note);
}

/** One directory of a workspace: where it is, what it holds, and the file opened from it. */
export const filesView: View = ({ root, scope }, projectId = "", workspaceId = "", kind = "", value = "") => {
  const file = kind === "file" ? segments(value) : null;
  const dir = file ? file.slice(0, -1) : segments(value);
  const errors = errorSlot();
  const entries = h("ul", { "aria-label": "Files", class: "files" });
  const note = h("p", { class: "muted", hidden: true });
  root.append(
    heading(`Files of ${workspaceId}`),
    breadcrumb(projectId, workspaceId, dir),
    errors.el,
    entries,
    note,
  );
  if (file && file.length > 0) {
    root.append(fileSection(projectId, workspaceId, file.join("/"), () => !scope.disposed));
  }

  const path = dir.length > 0 ? dir.join("/") : ".";
  callObject("workspace", { action: "files", project_id: projectId, workspace_id: workspaceId, path }).then(
    (answer) => {
      if (scope.disposed) return;
      const items = list(answer, "entries", parseEntry).sort(byKindThenName);
      const child = (name: string) => [...dir, name].join("/");
      replace(
        entries,
        ...items.map((e) =>
          h(
            "li",
            { class: e.type },
            e.type === "dir"
              ? link(`${e.name}/`, filesHash(projectId, workspaceId, child(e.name)))
              : link(e.name, fileHash(projectId, workspaceId, child(e.name))),
          ),
        ),
      );
      const truncated = bool(answer, "truncated") === true;
      note.textContent =
        items.length === 0 ? "This directory is empty." : "Only the first entries are listed.";
      note.hidden = items.length > 0 && !truncated;
    },
    (err: unknown) => {
      if (!scope.disposed) errors.show(messageOf(err));
    },
  );
};
