import { canWrite } from "../access.js";
import { callObject, callSettled } from "../api.js";
import { button, h, labelled, link, replace } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { age, when } from "../format.js";
import { bool, compact, type JsonRecord, list, num, rec, str, strings } from "../json.js";
import { projectSessions, type SessionListing } from "../models.js";
import { dataTable } from "../table.js";
import { heading, type View, type ViewContext } from "../view.js";
import { filesHash } from "./files.js";
import { editProjectForm } from "./project-form.js";

interface Workspace {
  workspace_id: string;
  default: boolean;
  origin: unknown;
  running: string[];
}

function parseWorkspace(r: JsonRecord): Workspace | null {
  const id = str(r, "workspace_id");
  return id === null
    ? null
    : {
        workspace_id: id,
        default: bool(r, "default") === true,
        origin: r.origin,
        running: strings(r, "running_sessions"),
      };
}

/** Settings as `dt`/`dd` pairs; nested values as compact JSON. */
function settings(info: JsonRecord): HTMLElement {
  const dl = h("dl", { class: "settings" });
  for (const [key, value] of Object.entries(info)) {
    if (key === "name") continue;
    dl.append(h("dt", {}, key), h("dd", {}, typeof value === "string" ? value : compact(value)));
  }
  return dl;
}

function workspaces(projectId: string, items: Workspace[]): HTMLElement {
  return h(
    "ul",
    { "aria-label": "Workspaces", class: "workspaces" },
    ...items.map((w) =>
      h(
        "li",
        {},
        h("code", {}, w.workspace_id),
        w.default ? " (default)" : "",
        w.running.length > 0 ? ` — running: ${w.running.join(", ")}` : "",
        " — ",
        link(`Files of ${w.workspace_id}`, filesHash(projectId, w.workspace_id)),
      ),
    ),
  );
}

/** The output of `container exec`: exit code, then each stream as the tool returns it. */
function execText(result: JsonRecord): string {
  const parts = [
    `exit code: ${compact(result.exit_code ?? null)}${bool(result, "timed_out") ? " (timed out)" : ""}${bool(result, "truncated") ? " (output truncated)" : ""}`,
  ];
  const stdout = str(result, "stdout");
  const stderr = str(result, "stderr");
  if (stdout) parts.push(`--- stdout ---\n${stdout}`);
  if (stderr) parts.push(`--- stderr ---\n${stderr}`);
  const ms = num(result, "duration_ms");
  if (ms !== null) parts.push(`(${ms} ms)`);
  return parts.join("\n");
}

/** Start/Stop container, Run a command, New session: for people who may write the project. */
function writerControls(
  ctx: ViewContext,
  projectId: string,
  info: JsonRecord,
  agents: string[],
): HTMLElement {
  const containerSlot = errorSlot();
  const containerNote = h("p", { class: "muted", "aria-live": "polite" });
  const containerButton = (label: string, action: "start" | "stop", done: string) => {
    const el: HTMLButtonElement = button(label, () => {
      void guarded(containerSlot, async () => {
        replace(containerNote, `${label}…`);
        await callSettled("container", { action, project_id: projectId }, (job) =>
          replace(containerNote, `${label}: running as job ${job}…`),
        );
        replace(containerNote, done);
      }, [el]);
    });
    return el;
  };

  const commandSlot = errorSlot();
  const command = h("input", { type: "text", autocomplete: "off", spellcheck: false });
  const run = h("button", { type: "submit" }, "Run");
  const output = h("pre", { "aria-label": "Command output", class: "output" });
  const runForm = h(
    "form",
    { "aria-label": "Run a command", class: "stack" },
    labelled("Command", command, "Split on whitespace into argv (no shell)."),
    h("div", { class: "actions" }, run),
    commandSlot.el,
  );
  runForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const argv = command.value.trim().split(/\s+/).filter(Boolean);
    if (argv.length === 0) return;
    void guarded(commandSlot, async () => {
      replace(output);
      const result = await callSettled("container", { action: "exec", project_id: projectId, command: argv });
      replace(output, execText(result));
    }, [run]);
  });

  const spawnSlot = errorSlot();
  const defaultAgent = str(info, "default_agent");
  const agent = h(
    "select",
    {},
    ...agents.map((name) => h("option", { value: name, selected: name === defaultAgent }, name)),
  );
  const start = h("button", { type: "submit" }, "Start session");
  const spawnNote = h("p", { class: "muted", "aria-live": "polite" });
  const spawnForm = h(
    "form",
    { "aria-label": "New session", class: "stack" },
    labelled("Agent", agent),
    h("div", { class: "actions" }, start),
    spawnNote,
    spawnSlot.el,
  );
  spawnForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void guarded(spawnSlot, async () => {
      const args: JsonRecord = { action: "spawn", project_id: projectId, new_session: true };
      if (agent.value) args.agent = agent.value;
      const spawned = await callSettled("session", args, (job) =>
        replace(spawnNote, `Starting (job ${job})…`),
      );
      const id = str(spawned, "session_id");
      if (id !== null) ctx.navigate(`#/sessions/${id}`);
    }, [start]);
  });

  return h(
    "section",
    { class: "controls" },
    h("h2", {}, "Container"),
    h(
      "div",
      { class: "actions" },
      containerButton("Start container", "start", "The container runs."),
      containerButton("Stop container", "stop", "The container stopped."),
    ),
    containerNote,
    containerSlot.el,
    runForm,
    output,
    h("h2", {}, "New session"),
    spawnForm,
  );
}

/**
 * The project's settings, and for writers "Edit settings": the settings form in their place,
 * which on save shows the settings as the server now holds them.
 */
function settingsSection(projectId: string, info: JsonRecord, writable: boolean): HTMLElement {
  const list = h("div", {}, settings(info));
  const section = h("section", { "aria-label": "Settings" }, h("h2", {}, "Settings"));
  if (!writable) {
    section.append(list);
    return section;
  }
  const slot = errorSlot();
  const note = h("p", { class: "muted", role: "status" });
  const place = h("div", {});
  let current = info;
  const close = () => {
    replace(place);
    list.hidden = false;
    edit.hidden = false;
  };
  const edit: HTMLButtonElement = button("Edit settings", () => {
    void guarded(slot, async () => {
      replace(note);
      const form = await editProjectForm(projectId, current, (saved) => {
        current = saved;
        replace(list, settings(saved));
        close();
        replace(note, "Settings saved.");
      });
      replace(place, form, h("div", { class: "actions" }, button("Cancel", close)));
      list.hidden = true;
      edit.hidden = true;
      form.querySelector<HTMLElement>("input, select, textarea")?.focus();
    }, [edit]);
  });
  section.append(h("div", { class: "actions" }, edit), note, slot.el, place, list);
  return section;
}

/** One project: settings, workspaces, its sessions, and for writers its container and new sessions. */
export const projectView: View = (ctx, projectId = "") => {
  const { root, scope } = ctx;
  const title = heading(projectId);
  const errors = errorSlot();
  root.append(title, errors.el);
  const sessions = dataTable<SessionListing>(
    "Project sessions",
    [
      { header: "Session", cell: (s) => link(s.session_id, `#/sessions/${s.session_id}`) },
      { header: "Workspace", cell: (s) => s.workspace_id ?? "—" },
      { header: "Status", cell: (s) => s.status },
      { header: "Age", cell: (s) => age(s.created_at), live: true },
      { header: "Ended", cell: (s) => when(s.ended_at) },
    ],
    (s) => s.session_id,
    "No sessions yet.",
  );

  void (async () => {
    try {
      const [info, spaces, options] = await Promise.all([
        callObject("project", { action: "get", project_id: projectId }),
        callObject("workspace", { action: "list", project_id: projectId }),
        callObject("project", { action: "options" }).catch(() => ({}) as JsonRecord),
      ]);
      if (scope.disposed) return;
      title.textContent = str(info, "name") ?? projectId;
      const agents = Object.keys(rec(options, "agents") ?? {});
      root.append(
        canWrite(projectId) ? writerControls(ctx, projectId, info, agents) : "",
        h("h2", {}, "Sessions"),
        sessions.el,
        h("h2", {}, "Workspaces"),
        workspaces(projectId, list(spaces, "workspaces", parseWorkspace)),
        settingsSection(projectId, info, canWrite(projectId)),
      );
      scope.every(3_000, async () => {
        const rows = await projectSessions(projectId);
        if (!scope.disposed) sessions.update(rows);
      });
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  })();
};
