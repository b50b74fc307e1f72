/**
 * Messages sent on an MCP session's GET stream, kept so a client that reconnects with
 * Last-Event-ID gets what it missed. Bounded: the newest MAX_KEPT messages are kept.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subscriptions (session_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
`;
const MAX_KEPT = 2000;

export class McpStore {
  readonly #sql: SqlStorage;
  #lastSeq: number;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
    this.#lastSeq = Number(sql.exec("SELECT COALESCE(MAX(seq), 0) AS s FROM outbox").one().s);
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Stores a message; returns its event id. */
  append(message: string): number {
    this.#lastSeq += 1;
    this.#sql.exec("INSERT INTO outbox (seq, message) VALUES (?, ?)", this.#lastSeq, message);
    if (this.#lastSeq % 100 === 0)
      this.#sql.exec("DELETE FROM outbox WHERE seq <= ?", this.#lastSeq - MAX_KEPT);
    return this.#lastSeq;
  }

  after(seq: number): { seq: number; message: string }[] {
    return this.#sql
      .exec("SELECT seq, message FROM outbox WHERE seq > ? ORDER BY seq", seq)
      .toArray()
      .map((r) => ({ seq: Number(r.seq), message: String(r.message) }));
  }

  getMeta<T>(key: string): T | null {
    const row = this.#sql.exec("SELECT v FROM meta WHERE k = ?", key).toArray()[0];
    return row ? (JSON.parse(String(row.v)) as T) : null;
  }

  setMeta(key: string, value: unknown): void {
    this.#sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", key, JSON.stringify(value));
  }

  subscriptions(): string[] {
    return this.#sql
      .exec("SELECT session_id FROM subscriptions")
      .toArray()
      .map((r) => String(r.session_id));
  }

  /** Forgets everything (the session was terminated). */
  clear(): void {
    this.#sql.exec("DELETE FROM outbox; DELETE FROM subscriptions; DELETE FROM meta;");
    this.#lastSeq = 0;
  }

  addSubscription(sessionId: string): void {
    this.#sql.exec("INSERT OR IGNORE INTO subscriptions (session_id) VALUES (?)", sessionId);
  }
}
