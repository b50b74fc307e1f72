import type { UsageTotals } from "../../../protocol/usage.js";

/**
 * A project's model usage, for reports by session and by day: each session's latest totals (as
 * its object last reported them) and, per UTC day, how much of them came that day. A report
 * carries cumulative totals; what it adds over the session's last known totals is the day's
 * share. Reports arrive at most once per model response, possibly out of order: one that is not
 * newer than what is known changes nothing.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_usage (
  session_id TEXT PRIMARY KEY, agent TEXT, model TEXT,
  requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  cost_usd REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage_days (
  day TEXT NOT NULL, session_id TEXT NOT NULL,
  requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  cost_usd REAL NOT NULL,
  PRIMARY KEY (day, session_id)
);
`;

export interface UsageRow extends UsageTotals {}

export interface SessionUsageRow extends UsageTotals {
  session_id: string;
  agent: string | null;
  model: string | null;
}

export interface DayUsageRow extends UsageTotals {
  day: string;
}

/** The UTC day of a time, `YYYY-MM-DD`. */
export function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

const SUMS =
  "SUM(d.requests) AS requests, SUM(d.input_tokens) AS input_tokens, " +
  "SUM(d.output_tokens) AS output_tokens, SUM(d.cost_usd) AS cost_usd";

function totals(r: Record<string, SqlStorageValue>): UsageTotals {
  return {
    requests: Number(r.requests ?? 0),
    input_tokens: Number(r.input_tokens ?? 0),
    output_tokens: Number(r.output_tokens ?? 0),
    cost_usd: Number(r.cost_usd ?? 0),
  };
}

export class UsageStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  /** Takes a session's cumulative totals in; false when they are not newer than the known ones. */
  record(
    sessionId: string,
    agent: string | null,
    model: string | null,
    now: UsageTotals,
    at: number,
  ): boolean {
    const row = this.#sql.exec("SELECT * FROM session_usage WHERE session_id = ?", sessionId).toArray()[0];
    const known = row ? totals(row) : null;
    if (known && now.requests <= known.requests && now.cost_usd <= known.cost_usd) return false;
    const delta = {
      requests: Math.max(0, now.requests - (known?.requests ?? 0)),
      input_tokens: Math.max(0, now.input_tokens - (known?.input_tokens ?? 0)),
      output_tokens: Math.max(0, now.output_tokens - (known?.output_tokens ?? 0)),
      cost_usd: Math.max(0, now.cost_usd - (known?.cost_usd ?? 0)),
    };
    this.#sql.exec(
      `INSERT INTO session_usage (session_id, agent, model, requests, input_tokens, output_tokens, cost_usd)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET agent = excluded.agent, model = excluded.model,
         requests = excluded.requests, input_tokens = excluded.input_tokens,
         output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd`,
      sessionId,
      agent,
      model,
      now.requests,
      now.input_tokens,
      now.output_tokens,
      now.cost_usd,
    );
    this.#sql.exec(
      `INSERT INTO usage_days (day, session_id, requests, input_tokens, output_tokens, cost_usd)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (day, session_id) DO UPDATE SET requests = requests + excluded.requests,
         input_tokens = input_tokens + excluded.input_tokens,
         output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd`,
      utcDay(at),
      sessionId,
      delta.requests,
      delta.input_tokens,
      delta.output_tokens,
      delta.cost_usd,
    );
    return true;
  }

  /** Use per day from `sinceDay` on, oldest first (days without use are absent). */
  byDay(sinceDay: string): DayUsageRow[] {
    return this.#sql
      .exec(
        `SELECT d.day AS day, ${SUMS} FROM usage_days d WHERE d.day >= ? GROUP BY d.day ORDER BY d.day`,
        sinceDay,
      )
      .toArray()
      .map((r) => ({ day: String(r.day), ...totals(r) }));
  }

  /** Use per session from `sinceDay` on, most costly first. */
  bySession(sinceDay: string, limit: number): SessionUsageRow[] {
    return this.#sql
      .exec(
        `SELECT d.session_id AS session_id, u.agent AS agent, u.model AS model, ${SUMS}
         FROM usage_days d LEFT JOIN session_usage u ON u.session_id = d.session_id
         WHERE d.day >= ? GROUP BY d.session_id ORDER BY SUM(d.cost_usd) DESC, d.session_id LIMIT ?`,
        sinceDay,
        limit,
      )
      .toArray()
      .map((r) => ({
        session_id: String(r.session_id),
        agent: r.agent === null ? null : String(r.agent),
        model: r.model === null ? null : String(r.model),
        ...totals(r),
      }));
  }

  /** Forgets everything (the project was deleted). */
  wipe(): void {
    this.#sql.exec("DELETE FROM session_usage; DELETE FROM usage_days;");
  }
}
