import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.js";

/** One audited operation: who (token id), what (action), on what (target), how it ended. */
export interface AuditEntry {
  /** Epoch ms. */
  at: number;
  token_id: string;
  /** `tool.action`, `http METHOD path`, or `host.<operation>`. */
  action: string;
  target: string | null;
  /** `ok`, or the error code it failed with. */
  outcome: string;
  /** The session whose droid made the call with its API key (null: a caller or a host). */
  via_session?: string | null;
}

export interface AuditRecord extends Omit<AuditEntry, "at"> {
  id: number;
  at: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, token_id TEXT NOT NULL,
  action TEXT NOT NULL, target TEXT, outcome TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_token ON audit (token_id, id);
`;

/** The log keeps the newest entries; older ones are dropped past this many. */
export const AUDIT_RETAIN = 100_000;

/**
 * The audit log: every mutating call (tool, HTTP, host operation), appended off the caller's
 * path (written with waitUntil after the answer). Admins read it with the `audit` tool.
 */
export class AuditLogDurableObject extends DurableObject<Env> {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(SCHEMA);
    // Logs written before droids had API keys have no via_session column yet.
    try {
      this.#sql.exec("ALTER TABLE audit ADD COLUMN via_session TEXT");
    } catch {
      // It has one already.
    }
  }

  async record(entry: AuditEntry): Promise<void> {
    this.#sql.exec(
      "INSERT INTO audit (at, token_id, action, target, outcome, via_session) VALUES (?, ?, ?, ?, ?, ?)",
      entry.at,
      entry.token_id.slice(0, 128),
      entry.action.slice(0, 256),
      entry.target === null ? null : entry.target.slice(0, 256),
      entry.outcome.slice(0, 64),
      entry.via_session ? entry.via_session.slice(0, 64) : null,
    );
    const newest = Number(this.#sql.exec("SELECT MAX(id) AS id FROM audit").one().id ?? 0);
    if (newest % 1000 === 0) this.#sql.exec("DELETE FROM audit WHERE id <= ?", newest - AUDIT_RETAIN);
  }

  /** Entries newest first, before the `before` id, optionally of one token or one action prefix. */
  async list(input: {
    before: number | null;
    limit: number;
    tokenId: string | null;
    action: string | null;
  }): Promise<{ entries: AuditRecord[]; next_before: number | null }> {
    const where: string[] = [];
    const params: SqlStorageValue[] = [];
    if (input.before !== null) {
      where.push("id < ?");
      params.push(input.before);
    }
    if (input.tokenId !== null) {
      where.push("token_id = ?");
      params.push(input.tokenId);
    }
    if (input.action !== null) {
      where.push("substr(action, 1, ?) = ?");
      params.push(input.action.length, input.action);
    }
    const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
    const rows = this.#sql
      .exec(`SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT ?`, ...params, input.limit + 1)
      .toArray();
    const page = rows.slice(0, input.limit).map((r) => ({
      id: Number(r.id),
      at: new Date(Number(r.at)).toISOString(),
      token_id: String(r.token_id),
      action: String(r.action),
      target: r.target === null ? null : String(r.target),
      outcome: String(r.outcome),
      via_session: r.via_session === null || r.via_session === undefined ? null : String(r.via_session),
    }));
    const last = page.at(-1);
    return { entries: page, next_before: rows.length > input.limit && last ? last.id : null };
  }
}
