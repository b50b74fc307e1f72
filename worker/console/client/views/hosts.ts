import { isAdmin } from "../access.js";
import { callObject } from "../api.js";
import { h, labelled, replace, rowButton } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { dash, when } from "../format.js";
import { bool, type JsonRecord, list, num, str } from "../json.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";

const REFRESH_MS = 5_000;

interface Host {
  host_id: string;
  connected: boolean;
  draining: boolean;
  sessions: number | null;
  max_sessions: number | null;
  runtime: string | null;
  version: string | null;
  missing_since: string | null;
  last_seen: string | null;
}

function parseHost(r: JsonRecord): Host | null {
  const id = str(r, "host_id");
  if (id === null) return null;
  return {
    host_id: id,
    connected: bool(r, "connected") === true,
    draining: bool(r, "draining") === true,
    sessions: num(r, "sessions"),
    max_sessions: num(r, "max_sessions"),
    runtime: str(r, "runtime"),
    // `host list` names neither yet; shown when it does.
    version: str(r, "version"),
    missing_since: str(r, "missing_since"),
    last_seen: str(r, "last_seen"),
  };
}

function state(host: Host): string {
  const base = host.connected ? "connected" : host.missing_since ? "missing" : "disconnected";
  return host.draining ? `${base}, draining` : base;
}

function lastSeen(host: Host): string {
  if (host.last_seen) return when(host.last_seen);
  if (host.connected) return "now";
  return host.missing_since ? `before ${when(host.missing_since)}` : "—";
}

/** The enrolment answer, as the tool gives it: how to start the host, and its environment file (shown once). */
function enrolmentText(answer: JsonRecord): string {
  const commands = answer.commands;
  const lines = Array.isArray(commands) ? commands.filter((c): c is string => typeof c === "string") : [];
  return [
    ...lines,
    "",
    `# ${str(answer, "env_path") ?? "the environment file"} (mode 0600):`,
    str(answer, "env_file") ?? "",
    str(answer, "note") ?? "",
  ].join("\n");
}

/** `host-` and 8 hex digits, for an enrolment that names no id. */
function generatedHostId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `host-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Container hosts (admin only): state and load; drain, revoke and enrol for admins. */
export const hostsView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const rowSlot = errorSlot();
  const admin = isAdmin();
  const refresh = () => loader.poke();
  const act = (control: HTMLButtonElement, args: JsonRecord) =>
    void guarded(rowSlot, async () => {
      await callObject("host", args);
      refresh();
    }, [control]);
  const table = dataTable<Host>(
    "Hosts",
    [
      { header: "Host", cell: (host) => h("code", {}, host.host_id) },
      { header: "State", cell: state },
      { header: "Load", cell: (host) => `${dash(host.sessions)} / ${dash(host.max_sessions)}` },
      { header: "Runtime", cell: (host) => dash(host.runtime) },
      { header: "Version", cell: (host) => dash(host.version) },
      { header: "Last seen", cell: lastSeen },
      ...(admin
        ? [
            {
              header: "Actions",
              cell: (host: Host) => {
                const drain: HTMLButtonElement = rowButton(
                  host.draining ? "Undrain" : "Drain",
                  host.host_id,
                  () => act(drain, { action: "drain", host_id: host.host_id, drain: !host.draining }),
                );
                const revoke: HTMLButtonElement = rowButton(
                  "Revoke",
                  host.host_id,
                  () => act(revoke, { action: "revoke", host_id: host.host_id }),
                  "danger",
                );
                return h("div", { class: "actions" }, drain, revoke);
              },
            },
          ]
        : []),
    ],
    (host) => host.host_id,
    "No hosts known.",
  );
  root.append(heading("Hosts"), errors.el, rowSlot.el, table.el);

  if (admin) {
    const slot = errorSlot();
    const hostId = h("input", { type: "text", autocomplete: "off", spellcheck: false });
    const enrol = h("button", { type: "submit" }, "Enrol a host");
    const place = h("div");
    const form = h(
      "form",
      { "aria-label": "Enrol a host", class: "stack" },
      labelled("Host id", hostId, "The new host-agent's --host-id (empty: a generated one)."),
      h("div", { class: "actions" }, enrol),
      slot.el,
      place,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const id = hostId.value.trim() || generatedHostId();
      void guarded(slot, async () => {
        const answer = await callObject("host", {
          action: "enrol",
          host_id: id,
          worker_url: location.origin,
        });
        replace(
          place,
          h("p", {}, "Shown once: save the environment file on the new host now."),
          h("pre", { "aria-label": "Host enrolment", class: "output" }, enrolmentText(answer)),
        );
        hostId.value = "";
        refresh();
      }, [enrol]);
    });
    root.append(h("h2", {}, "Enrol a host"), form);
  }

  const loader = scope.every(REFRESH_MS, async () => {
    try {
      const answer = await callObject("host", { action: "list" });
      if (scope.disposed) return;
      table.update(list(answer, "hosts", parseHost));
      errors.clear();
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  });
};
