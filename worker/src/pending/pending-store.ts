import type { z } from "zod";
import { type JsonObject, JsonObjectSchema } from "../../../protocol/json.js";
import { AppError } from "../errors.js";

/**
 * One pending request as stored: waiting for its answer until `deadline`, or done with its
 * outcome. `subject` says what is asked (a caller tool's name, say); `payload` carries the
 * request's arguments.
 */
export interface PendingRow<O> {
  id: string;
  subject: string;
  payload: JsonObject;
  deadline: number;
  state: "waiting" | "done";
  outcome: O | null;
  doneAt: number | null;
}

/**
 * Every kind of pending request of one object shares one table, keyed by (kind, id). Every query
 * on a request's path is an index lookup, so its cost does not grow with the object's history:
 * by primary key, waiting ones by (kind, state, deadline), finished ones by (kind, state, done_at).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS pending (
  kind TEXT NOT NULL, id TEXT NOT NULL, subject TEXT NOT NULL, deadline INTEGER NOT NULL,
  state TEXT NOT NULL, payload TEXT, outcome TEXT, done_at INTEGER, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS pending_waiting ON pending (kind, state, deadline);
CREATE INDEX IF NOT EXISTS pending_done ON pending (kind, state, done_at);
`;

type Row = Record<string, SqlStorageValue>;

/**
 * The SQLite rows of one kind of pending request (synchronous, DO SQLite). Outcomes and payloads
 * are parsed by their schemas on every read: a row outlives the code that wrote it.
 */
export class PendingStore<O> {
  readonly #sql: SqlStorage;
  readonly #kind: string;
  readonly #outcome: z.ZodType<O>;

  constructor(sql: SqlStorage, kind: string, outcome: z.ZodType<O>) {
    this.#sql = sql;
    this.#kind = kind;
    this.#outcome = outcome;
    sql.exec(SCHEMA);
  }

  /** Copies rows of an older table into this kind (once: the old table is dropped after). */
  adopt(table: string, columns: { id: string; subject: string; payload: string }): void {
    const known = this.#sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", table);
    if (known.toArray().length === 0) return;
    const hasPayload = this.#sql
      .exec(`PRAGMA table_info(${table})`)
      .toArray()
      .some((c) => c.name === columns.payload);
    this.#sql.exec(
      `INSERT OR IGNORE INTO pending (kind, id, subject, deadline, state, payload, outcome, done_at)
       SELECT ?, ${columns.id}, ${columns.subject}, deadline, state, ${hasPayload ? columns.payload : "NULL"}, outcome, done_at FROM ${table}`,
      this.#kind,
    );
    this.#sql.exec(`DROP TABLE ${table}`);
  }

  find(id: string): PendingRow<O> | null {
    const row = this.#sql
      .exec("SELECT * FROM pending WHERE kind = ? AND id = ?", this.#kind, id)
      .toArray()[0];
    return row ? this.#toRow(row) : null;
  }

  insertWaiting(request: Pick<PendingRow<O>, "id" | "subject" | "deadline" | "payload">): void {
    this.#sql.exec(
      "INSERT INTO pending (kind, id, subject, deadline, state, payload) VALUES (?, ?, ?, ?, 'waiting', ?)",
      this.#kind,
      request.id,
      request.subject,
      request.deadline,
      JSON.stringify(request.payload),
    );
  }

  /** Records a request decided the moment it arrived, so a re-send gets the same outcome. */
  insertDone(request: Pick<PendingRow<O>, "id" | "subject">, outcome: O, now: number): void {
    this.#sql.exec(
      "INSERT OR IGNORE INTO pending (kind, id, subject, deadline, state, outcome, done_at) VALUES (?, ?, ?, ?, 'done', ?, ?)",
      this.#kind,
      request.id,
      request.subject,
      now,
      JSON.stringify(outcome),
      now,
    );
  }

  /** Marks a waiting request done; false when it was not waiting (decided at most once). */
  complete(id: string, outcome: O, now: number): boolean {
    const cursor = this.#sql.exec(
      "UPDATE pending SET state = 'done', outcome = ?, done_at = ? WHERE kind = ? AND id = ? AND state = 'waiting'",
      JSON.stringify(outcome),
      now,
      this.#kind,
      id,
    );
    return cursor.rowsWritten > 0;
  }

  /**
   * Waiting requests, soonest deadline first, those with the same deadline in the order they
   * arrived (all of them, or the first `limit`).
   */
  waiting(limit = -1): PendingRow<O>[] {
    return this.#sql
      .exec(
        "SELECT * FROM pending WHERE kind = ? AND state = 'waiting' ORDER BY deadline, rowid LIMIT ?",
        this.#kind,
        limit,
      )
      .toArray()
      .map((row) => this.#toRow(row));
  }

  countWaiting(): number {
    return Number(
      this.#sql
        .exec("SELECT COUNT(*) AS n FROM pending WHERE kind = ? AND state = 'waiting'", this.#kind)
        .one().n,
    );
  }

  expired(now: number): PendingRow<O>[] {
    return this.#sql
      .exec(
        "SELECT * FROM pending WHERE kind = ? AND state = 'waiting' AND deadline <= ? ORDER BY deadline",
        this.#kind,
        now,
      )
      .toArray()
      .map((row) => this.#toRow(row));
  }

  earliestDeadline(): number | null {
    return this.#first("deadline", "waiting");
  }

  earliestDoneAt(): number | null {
    return this.#first("done_at", "done");
  }

  /** Forgets finished requests done before `before` (after which their ids count as unknown). */
  pruneDone(before: number): void {
    this.#sql.exec(
      "DELETE FROM pending WHERE kind = ? AND state = 'done' AND done_at < ?",
      this.#kind,
      before,
    );
  }

  #first(column: "deadline" | "done_at", state: "waiting" | "done"): number | null {
    const row = this.#sql
      .exec(
        `SELECT ${column} AS t FROM pending WHERE kind = ? AND state = ? ORDER BY ${column} LIMIT 1`,
        this.#kind,
        state,
      )
      .toArray()[0];
    return row ? Number(row.t) : null;
  }

  #toRow(row: Row): PendingRow<O> {
    const parsePayload = () =>
      typeof row.payload === "string" ? this.#parse(row.payload, JsonObjectSchema, "payload") : {};
    let payload: JsonObject | undefined;
    return {
      id: String(row.id),
      subject: String(row.subject),
      // Parsed when first read: most reads (an answer, a re-sent call) never look at it.
      get payload() {
        payload ??= parsePayload();
        return payload;
      },
      deadline: Number(row.deadline),
      state: row.state === "done" ? "done" : "waiting",
      outcome: typeof row.outcome === "string" ? this.#parse(row.outcome, this.#outcome, "outcome") : null,
      doneAt: row.done_at === null ? null : Number(row.done_at),
    };
  }

  #parse<T>(text: string, schema: z.ZodType<T>, what: string): T {
    const parsed = schema.safeParse(JSON.parse(text));
    if (!parsed.success) {
      throw new AppError(
        "internal",
        `a stored ${this.#kind} request's ${what} does not parse: ${parsed.error.message}`,
      );
    }
    return parsed.data;
  }
}
