import { callObject } from "../api.js";
import { type Child, h, labelled, link, replace } from "../dom.js";
import { errorSlot, guarded } from "../errors.js";
import { dash, usd, when } from "../format.js";
import { type JsonRecord, list, num, rec, str } from "../json.js";
import { type Column, dataTable } from "../table.js";
import { heading, type View } from "../view.js";

/** Model use over a period (`usage`, read access; each person sees only projects they may read). */
interface Use {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

interface ProjectUse extends Use {
  project_id: string;
  name: string;
}

interface DayUse extends Use {
  day: string;
}

interface SessionUse extends Use {
  session_id: string;
  project_id: string;
  agent: string | null;
  model: string | null;
  status: string;
  created_at: string | null;
}

const PERIODS = [7, 30, 90] as const;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;
const SVG = "http://www.w3.org/2000/svg";
/** Chart geometry in viewBox units: each day a slot, bars up to BAR_MAX tall. */
const SLOT = 10;
const BAR_MAX = 100;

function parseUse(r: JsonRecord): Use {
  return {
    requests: num(r, "requests") ?? 0,
    input_tokens: num(r, "input_tokens") ?? 0,
    output_tokens: num(r, "output_tokens") ?? 0,
    cost_usd: num(r, "cost_usd") ?? 0,
  };
}

function parseProjectUse(r: JsonRecord): ProjectUse | null {
  const id = str(r, "project_id");
  return id === null ? null : { project_id: id, name: str(r, "name") ?? id, ...parseUse(r) };
}

function parseDayUse(r: JsonRecord): DayUse | null {
  const day = str(r, "day");
  return day === null ? null : { day, ...parseUse(r) };
}

function parseSessionUse(r: JsonRecord): SessionUse | null {
  const id = str(r, "session_id");
  const project = str(r, "project_id");
  if (id === null || project === null) return null;
  return {
    session_id: id,
    project_id: project,
    agent: str(r, "agent"),
    model: str(r, "model"),
    status: str(r, "status") ?? "unknown",
    created_at: str(r, "created_at"),
    ...parseUse(r),
  };
}

/** A count with thousands separators, the same in every locale (like the dollar amounts). */
function count(value: number): string {
  return value.toLocaleString("en-US");
}

function requests(value: number): string {
  return `${count(value)} request${value === 1 ? "" : "s"}`;
}

function totalsText(u: Use): string {
  return [
    requests(u.requests),
    `${count(u.input_tokens)} input tokens`,
    `${count(u.output_tokens)} output tokens`,
    usd(u.cost_usd),
  ].join(" · ");
}

/** Whole days from `from` to `to` (both "YYYY-MM-DD"); NaN when either is not a date. */
function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS);
}

/**
 * One bar per day with use, placed on the day's slot of the period (days without use are gaps),
 * each titled with its day, cost and requests. Sizes are SVG attributes and classes, never inline
 * styles (the CSP forbids them).
 */
function costChart(days: readonly DayUse[], since: string | null, period: number): SVGSVGElement {
  const first = since?.slice(0, 10) ?? days[0]?.day ?? "";
  const slot = (d: DayUse) => {
    const at = daysBetween(first, d.day);
    return Number.isFinite(at) ? Math.min(Math.max(at, 0), period) : 0;
  };
  const max = Math.max(...days.map((d) => d.cost_usd), 0);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Cost per day");
  svg.setAttribute("viewBox", `0 0 ${(period + 1) * SLOT} ${BAR_MAX}`);
  svg.setAttribute("preserveAspectRatio", "none");
  for (const d of days) {
    // A day with use always shows, however small its cost.
    const height = Math.max(max > 0 ? (d.cost_usd / max) * BAR_MAX : 0, 1);
    const bar = document.createElementNS(SVG, "rect");
    bar.setAttribute("class", "bar");
    bar.setAttribute("x", String(slot(d) * SLOT + 1));
    bar.setAttribute("y", String(BAR_MAX - height));
    bar.setAttribute("width", String(SLOT - 2));
    bar.setAttribute("height", String(height));
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${d.day}: ${usd(d.cost_usd)}, ${requests(d.requests)}`;
    bar.append(title);
    svg.append(bar);
  }
  return svg;
}

function tokens(u: Use): string {
  return `${count(u.input_tokens)} in · ${count(u.output_tokens)} out`;
}

/** Requests, tokens and cost: the last columns of every table. */
function useColumns<T extends Use>(): Column<T>[] {
  return [
    { header: "Requests", cell: (u) => count(u.requests) },
    { header: "Input tokens", cell: (u) => count(u.input_tokens) },
    { header: "Output tokens", cell: (u) => count(u.output_tokens) },
    { header: "Cost", cell: (u) => usd(u.cost_usd) },
  ];
}

/** Totals, cost per day, and use by project, day and session over the chosen period. */
export const usageView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const period = h(
    "select",
    {},
    ...PERIODS.map((days) =>
      h("option", { value: String(days), selected: days === DEFAULT_DAYS }, `Last ${days} days`),
    ),
  );
  const totals = h("p", { class: "status-line", "aria-live": "polite" });
  const chart = h("div", { class: "chart-wrap" });
  const names = new Map<string, string>();
  const projectLink = (id: string): Child => link(names.get(id) ?? id, `#/projects/${id}`);
  const byProject = dataTable<ProjectUse>(
    "Usage by project",
    [
      { header: "Project", cell: (p) => link(p.name, `#/projects/${p.project_id}`) },
      ...useColumns<ProjectUse>(),
    ],
    (p) => p.project_id,
    "No projects in this period.",
  );
  const byDay = dataTable<DayUse>(
    "Usage by day",
    [{ header: "Day", cell: (d) => d.day }, ...useColumns<DayUse>()],
    (d) => d.day,
    "No days in this period.",
  );
  const bySession = dataTable<SessionUse>(
    "Usage by session",
    [
      { header: "Session", cell: (s) => link(s.session_id, `#/sessions/${s.session_id}`) },
      { header: "Project", cell: (s) => projectLink(s.project_id) },
      { header: "Agent", cell: (s) => dash(s.agent) },
      { header: "Model", cell: (s) => dash(s.model) },
      { header: "Status", cell: (s) => s.status },
      { header: "Started", cell: (s) => when(s.created_at) },
      { header: "Tokens", cell: tokens },
      { header: "Cost", cell: (s) => usd(s.cost_usd) },
    ],
    (s) => s.session_id,
    "No sessions in this period.",
  );

  // The period the page shows: a failed switch puts the select back, so it never names other data.
  let shown = String(DEFAULT_DAYS);
  const load = async () => {
    const done = await guarded(errors, async () => {
      const days = Number(period.value) || DEFAULT_DAYS;
      const answer = await callObject("usage", { days });
      if (scope.disposed) return;
      const projects = list(answer, "by_project", parseProjectUse);
      const perDay = list(answer, "by_day", parseDayUse);
      for (const p of projects) names.set(p.project_id, p.name);
      totals.textContent = totalsText(parseUse(rec(answer, "totals") ?? {}));
      replace(
        chart,
        perDay.length === 0
          ? h("p", { class: "empty" }, "No model use in this period.")
          : costChart(perDay, str(answer, "since"), days),
      );
      byProject.update(projects);
      byDay.update(perDay);
      bySession.update(list(answer, "sessions", parseSessionUse));
      return true;
    }, [period]);
    if (done) shown = period.value;
    else period.value = shown;
  };

  period.addEventListener("change", () => void load());
  root.append(
    heading("Usage"),
    h("div", { class: "period" }, labelled("Period", period)),
    errors.el,
    totals,
    chart,
    h("h2", {}, "By project"),
    byProject.el,
    h("h2", {}, "By day"),
    byDay.el,
    h("h2", {}, "By session"),
    bySession.el,
  );
  void load();
};
