import { canWriteAll } from "../access.js";
import { callObject, callSettled } from "../api.js";
import { h, replace, rowButton } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { when } from "../format.js";
import { bool, type JsonRecord, list, rec, str, strings } from "../json.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";

const REFRESH_MS = 5_000;
const HISTORY_LIMIT = 20;

interface Schedule {
  schedule_id: string;
  name: string;
  cron: string;
  timezone: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  next_run_at: string | null;
  last_run: string | null;
  projects: string[];
}

function parseSchedule(r: JsonRecord): Schedule | null {
  const id = str(r, "schedule_id");
  if (id === null) return null;
  const last = rec(r, "last_run");
  return {
    schedule_id: id,
    name: str(r, "name") || id,
    cron: str(r, "cron_expr") ?? "",
    timezone: str(r, "timezone"),
    enabled: bool(r, "enabled") === true,
    disabled_reason: str(r, "disabled_reason"),
    next_run_at: str(r, "next_run_at"),
    last_run: last
      ? `${when(str(last, "at"))} (${str(last, "trigger") ?? "?"}: ${str(last, "outcome") ?? "?"})`
      : null,
    projects: list(r, "targets", (t) => str(t, "project_id")),
  };
}

interface Run {
  run_id: string;
  at: string | null;
  trigger: string;
  outcome: string;
  reason: string | null;
  sessions: string[];
}

function parseRun(r: JsonRecord): Run | null {
  const id = str(r, "run_id");
  if (id === null) return null;
  return {
    run_id: id,
    at: str(r, "at"),
    trigger: str(r, "trigger") ?? "?",
    outcome: str(r, "outcome") ?? "?",
    reason: str(r, "reason"),
    sessions: strings(r, "session_ids"),
  };
}

/** A `<details>` that reads `schedule history` when opened. */
function history(scheduleId: string): HTMLElement {
  const body = h("div", {}, "Loading…");
  const details = h("details", {}, h("summary", {}, "History"), body);
  details.addEventListener("toggle", () => {
    if (!details.open) return;
    callObject("schedule", { action: "history", schedule_id: scheduleId, limit: HISTORY_LIMIT }).then(
      (answer) => {
        const runs = list(answer, "runs", parseRun);
        replace(
          body,
          runs.length === 0
            ? h("p", { class: "empty" }, "No runs yet.")
            : h(
                "ol",
                { class: "history" },
                ...runs.map((run) =>
                  h(
                    "li",
                    {},
                    `${when(run.at)} — ${run.trigger}: ${run.outcome}`,
                    run.reason ? ` (${run.reason})` : "",
                    ...run.sessions.flatMap((id) => [" ", h("a", { href: `#/sessions/${id}` }, id)]),
                  ),
                ),
              ),
        );
      },
      (err: unknown) => replace(body, h("p", { role: "alert", class: "error" }, messageOf(err))),
    );
  });
  return details;
}

/** Schedules the person may see; trigger and enable/disable for writers of every target. */
export const schedulesView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const rowSlot = errorSlot();
  const note = h("p", { class: "muted", "aria-live": "polite" });
  const act = (control: HTMLButtonElement, work: () => Promise<string>) =>
    void guarded(rowSlot, async () => {
      replace(note, await work());
      loader.poke();
    }, [control]);
  const controls = (s: Schedule) => {
    if (!canWriteAll(s.projects)) return "";
    const trigger: HTMLButtonElement = rowButton("Trigger", s.name, () =>
      act(trigger, async () => {
        const run = await callSettled("schedule", { action: "trigger", schedule_id: s.schedule_id });
        return `${s.name} triggered: ${str(run, "outcome") ?? "started"}.`;
      }),
    );
    const toggle: HTMLButtonElement = rowButton(s.enabled ? "Disable" : "Enable", s.name, () =>
      act(toggle, async () => {
        await callObject("schedule", { action: "update", schedule_id: s.schedule_id, enabled: !s.enabled });
        return `${s.name} ${s.enabled ? "disabled" : "enabled"}.`;
      }),
    );
    return h("div", { class: "actions" }, trigger, toggle);
  };
  const table = dataTable<Schedule>(
    "Schedules",
    [
      { header: "Name", cell: (s) => s.name },
      { header: "Cron", cell: (s) => h("code", {}, s.timezone ? `${s.cron} (${s.timezone})` : s.cron) },
      {
        header: "Enabled",
        cell: (s) => (s.enabled ? "yes" : s.disabled_reason ? `no: ${s.disabled_reason}` : "no"),
      },
      { header: "Last run", cell: (s) => s.last_run ?? "—" },
      { header: "Next run", cell: (s) => when(s.next_run_at) },
      { header: "Actions", cell: controls },
      { header: "History", cell: (s) => history(s.schedule_id) },
    ],
    (s) => s.schedule_id,
    "No schedules.",
  );
  root.append(heading("Schedules"), errors.el, rowSlot.el, note, table.el);
  const loader = scope.every(REFRESH_MS, async () => {
    try {
      const answer = await callObject("schedule", { action: "list", limit: 100 });
      if (scope.disposed) return;
      table.update(list(answer, "schedules", parseSchedule));
      errors.clear();
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  });
};
