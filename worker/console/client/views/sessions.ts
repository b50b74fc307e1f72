import { link } from "../dom.js";
import { errorSlot, messageOf } from "../errors.js";
import { age, dash, usd } from "../format.js";
import {
  isLive,
  listProjects,
  type ProjectEntry,
  projectSessions,
  type SessionInfo,
  type SessionListing,
  sessionInfo,
} from "../models.js";
import { type Column, dataTable } from "../table.js";
import { heading, type View } from "../view.js";

/** How often the list is read again while shown. */
const REFRESH_MS = 2_000;
/** Most sessions listed, newest first. */
const MAX_ROWS = 100;
/** Sessions whose details (agent, model, host, cost, pending) are asked for: the live ones, up to this many. */
const MAX_DETAILS = 25;

interface Row {
  listing: SessionListing;
  project: ProjectEntry | undefined;
  info: SessionInfo | null;
}

/**
 * Live and recent sessions across every project the person may read. `session list` is per
 * project and lists no agent, model, host, cost or pending count: those come from `session get`
 * of the live sessions.
 */
export const sessionsView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const columns: Column<Row>[] = [
    { header: "Session", cell: (r) => link(r.listing.session_id, `#/sessions/${r.listing.session_id}`) },
    {
      header: "Project",
      cell: (r) => link(r.project?.name ?? r.listing.project_id, `#/projects/${r.listing.project_id}`),
    },
    { header: "Status", cell: (r) => r.info?.status ?? r.listing.status },
    { header: "Agent", cell: (r) => dash(r.info?.agent) },
    { header: "Model", cell: (r) => dash(r.info?.model) },
    { header: "Host", cell: (r) => dash(r.info?.host_id) },
    { header: "Age", cell: (r) => age(r.listing.created_at), live: true },
    { header: "Cost", cell: (r) => usd(r.info?.cost_usd ?? null) },
    { header: "Pending", cell: (r) => (r.info ? String(r.info.pending) : "—") },
  ];
  const table = dataTable("Sessions", columns, (r) => r.listing.session_id, "No sessions yet.");
  root.append(heading("Sessions"), errors.el, table.el);

  scope.every(REFRESH_MS, async () => {
    try {
      const projects = await listProjects();
      const byId = new Map(projects.map((p) => [p.project_id, p]));
      const perProject = await Promise.all(projects.map((p) => projectSessions(p.project_id)));
      const listings = perProject
        .flat()
        .sort((a, b) => (b.created_at ?? "").localeCompare(a.created_at ?? ""))
        .slice(0, MAX_ROWS);
      const live = listings.filter((s) => isLive(s.status)).slice(0, MAX_DETAILS);
      const infos = await Promise.all(live.map((s) => sessionInfo(s.session_id).catch(() => null)));
      const infoOf = new Map(infos.flatMap((i) => (i ? [[i.session_id, i] as const] : [])));
      if (scope.disposed) return;
      table.update(
        listings.map((listing) => ({
          listing,
          project: byId.get(listing.project_id),
          info: infoOf.get(listing.session_id) ?? null,
        })),
      );
      errors.clear();
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  });
};
