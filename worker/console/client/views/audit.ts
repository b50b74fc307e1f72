import { callObject } from "../api.js";
import { h, labelled } from "../dom.js";
import { errorSlot, guarded } from "../errors.js";
import { dash, when } from "../format.js";
import { type JsonRecord, list, num, str } from "../json.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";

const PAGE = 200;

interface Entry {
  id: number;
  at: string | null;
  token_id: string;
  action: string;
  target: string | null;
  outcome: string;
  via_session: string | null;
}

function parseEntry(r: JsonRecord): Entry | null {
  const id = num(r, "id");
  if (id === null) return null;
  return {
    id,
    at: str(r, "at"),
    token_id: str(r, "token_id") ?? "",
    action: str(r, "action") ?? "",
    target: str(r, "target"),
    outcome: str(r, "outcome") ?? "",
    via_session: str(r, "via_session"),
  };
}

function matches(entry: Entry, needle: string): boolean {
  if (needle === "") return true;
  return [entry.token_id, entry.action, entry.target, entry.outcome, entry.via_session, entry.at].some(
    (field) => field?.toLowerCase().includes(needle),
  );
}

/**
 * The audit log (admin only), newest first. "Filter" narrows the loaded rows at once; the token
 * and action prefix are the tool's own filters, applied by the server.
 */
export const auditView: View = ({ root }) => {
  const errors = errorSlot();
  let entries: Entry[] = [];
  let nextBefore: number | null = null;
  const table = dataTable<Entry>(
    "Audit log",
    [
      { header: "Time", cell: (e) => when(e.at) },
      { header: "Token", cell: (e) => h("code", {}, e.token_id) },
      { header: "Action", cell: (e) => e.action },
      { header: "Target", cell: (e) => dash(e.target) },
      { header: "Outcome", cell: (e) => e.outcome },
      { header: "Via session", cell: (e) => dash(e.via_session) },
    ],
    (e) => String(e.id),
    "No entries.",
  );
  const filter = h("input", { type: "text", autocomplete: "off" });
  const tokenId = h("input", { type: "text", autocomplete: "off", spellcheck: false });
  const actionPrefix = h("input", { type: "text", autocomplete: "off", spellcheck: false });
  const apply = h("button", { type: "submit" }, "Apply");
  const older = h("button", { type: "button", hidden: true }, "Load older");
  const show = () => table.update(entries.filter((e) => matches(e, filter.value.trim().toLowerCase())));

  const load = (append: boolean) =>
    guarded(errors, async () => {
      const args: JsonRecord = { limit: PAGE };
      if (tokenId.value.trim()) args.token_id = tokenId.value.trim();
      if (actionPrefix.value.trim()) args.action_prefix = actionPrefix.value.trim();
      if (append && nextBefore !== null) args.before = nextBefore;
      const answer = await callObject("audit", args);
      const page = list(answer, "entries", parseEntry);
      entries = append ? [...entries, ...page] : page;
      nextBefore = num(answer, "next_before");
      older.hidden = nextBefore === null;
      show();
    }, [apply, older]);

  const serverFilters = h(
    "form",
    { "aria-label": "Audit query", class: "inline" },
    labelled("Token id", tokenId),
    labelled("Action prefix", actionPrefix, "e.g. token. or session.spawn"),
    h("div", { class: "actions" }, apply),
  );
  serverFilters.addEventListener("submit", (event) => {
    event.preventDefault();
    void load(false);
  });
  filter.addEventListener("input", show);
  older.addEventListener("click", () => void load(true));

  root.append(
    heading("Audit"),
    labelled("Filter", filter, "Narrows the rows below as you type."),
    serverFilters,
    errors.el,
    table.el,
    h("div", { class: "actions" }, older),
  );
  void load(false);
};
