import { h } from "../dom.js";
import type { SessionEventLine } from "../events.js";
import { bytes, clock, dash, hostPort } from "../format.js";
import { isRecord, type JsonRecord, list, num, rec, str, strings } from "../json.js";
import { dataTable } from "../table.js";

/**
 * A session's network on its page: the hosts it reached, with connections and bytes (`session
 * get`'s `network`, read as the page refreshes), and the connections the host's gate refused (its
 * `network_blocked` events: where, how, and why). Host names come from the agent's requests:
 * untrusted text, shown as text.
 */

interface HostRow {
  host: string;
  port: number | null;
  connections: number;
  bytes_out: number;
  bytes_in: number;
  blocked: number;
}

interface BlockedRow {
  position: number;
  at: string | null;
  host: string;
  port: number | null;
  method: string | null;
  code: string;
  reason: string;
  source: string | null;
}

/** Refusals kept on the page (the session's events keep them all). */
const MAX_BLOCKED_ROWS = 200;

function parseHost(r: JsonRecord): HostRow | null {
  const host = str(r, "host");
  if (host === null) return null;
  return {
    host,
    port: num(r, "port"),
    connections: num(r, "connections") ?? 0,
    bytes_out: num(r, "bytes_out") ?? 0,
    bytes_in: num(r, "bytes_in") ?? 0,
    blocked: num(r, "blocked") ?? 0,
  };
}

/** A policy in a line: its mode, and for an allowlist what it opens; the methods it limits to. */
export function policyText(policy: unknown): string {
  if (!isRecord(policy)) return "—";
  const mode = str(policy, "mode") ?? "?";
  const opens = [...strings(policy, "allow"), ...strings(policy, "presets").map((name) => `preset ${name}`)];
  const methods = strings(policy, "methods");
  return [
    mode === "allowlist" ? `allowlist: ${opens.length > 0 ? opens.join(", ") : "nothing listed"}` : mode,
    methods.length > 0 ? `methods ${methods.join(", ")}` : null,
  ]
    .filter((part) => part !== null)
    .join("; ");
}

export interface NetworkSection {
  readonly el: HTMLElement;
  /** `session get`'s answer: the hosts reached and the session's own policies. */
  update(session: JsonRecord): void;
  /** A session event: a `network_blocked` one becomes a row. */
  event(line: SessionEventLine): void;
}

export function networkSection(): NetworkSection {
  const summary = h("p", { class: "muted" });
  const hosts = dataTable<HostRow>(
    "Allowed hosts",
    [
      { header: "Host", cell: (r) => h("code", {}, r.port === null ? r.host : hostPort(r.host, r.port)) },
      { header: "Connections", cell: (r) => r.connections },
      { header: "Sent", cell: (r) => bytes(r.bytes_out) },
      { header: "Received", cell: (r) => bytes(r.bytes_in) },
      { header: "Refused", cell: (r) => r.blocked },
    ],
    (r) => `${r.host} ${r.port ?? ""}`,
    "No connection yet.",
  );
  const blocked = dataTable<BlockedRow>(
    "Blocked connections",
    [
      { header: "Time", cell: (r) => clock(r.at) },
      { header: "Host", cell: (r) => h("code", {}, hostPort(r.host, r.port)) },
      { header: "Method", cell: (r) => dash(r.method) },
      { header: "Reason", cell: (r) => `${r.code}: ${r.reason}` },
      { header: "Policy", cell: (r) => dash(r.source) },
    ],
    (r) => String(r.position),
    "Nothing refused.",
  );
  const refused: BlockedRow[] = [];
  const el = h(
    "section",
    { "aria-label": "Network" },
    h("h2", {}, "Network"),
    summary,
    h("h3", {}, "Allowed hosts"),
    hosts.el,
    h("h3", {}, "Blocked connections"),
    blocked.el,
  );

  return {
    el,
    update(session) {
      const network = rec(session, "network");
      if (!network) return;
      const rows = list(network, "hosts", parseHost).filter((r) => r.connections > 0);
      const other = rec(network, "other");
      const otherRow = other ? parseHost({ ...other, host: "(other hosts)" }) : null;
      if (otherRow && otherRow.connections > 0) rows.push({ ...otherRow, port: null });
      hosts.update(rows);
      const policies = Array.isArray(network.policies) ? network.policies : [];
      summary.textContent = [
        policies.length > 0
          ? `This session's own policy (with its project's; the stricter wins): ${policies.map(policyText).join(" and ")}.`
          : "The project's network policy applies.",
        `${num(network, "blocked") ?? 0} connection(s) refused.`,
      ].join(" ");
    },
    event(line) {
      if (line.type !== "network_blocked") return;
      const e = line.event;
      refused.push({
        position: line.position,
        at: line.at,
        host: str(e, "host") ?? "?",
        port: num(e, "port"),
        method: str(e, "method"),
        code: str(e, "code") ?? "?",
        reason: str(e, "reason") ?? "",
        source: str(e, "source"),
      });
      if (refused.length > MAX_BLOCKED_ROWS) refused.shift();
      blocked.update(refused);
    },
  };
}
