import { decodeRecord, encodeRecord } from "../objects/stored-record.js";
import type { SessionRecord } from "./session-record.js";
import { SESSION_RECORD } from "./session-record-format.js";

/** How an MCP session subscribed to this session is doing. */
export type SubscriberState = "idle" | "live" | "dropped";

export interface SubscriberRow {
  mcpSessionId: string;
  state: SubscriberState;
  changedAt: number;
}

/**
 * Every query on a relayed call's path is an index lookup, so its cost does not grow with the
 * session's history: events by index, messages by seq; subscribers are cached. (Caller tool calls
 * are pending requests, in the table of pending/pending-store.ts.)
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (idx INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subscribers (mcp_session_id TEXT PRIMARY KEY, state TEXT NOT NULL, changed_at INTEGER NOT NULL);
`;

type Row = Record<string, SqlStorageValue>;

function toSubscriber(row: Row): SubscriberRow {
  return {
    mcpSessionId: String(row.mcp_session_id),
    state: row.state as SubscriberState,
    changedAt: Number(row.changed_at),
  };
}

/** The SQLite tables of one SessionDurableObject. All calls are synchronous (DO SQLite). */
export class SessionStore {
  readonly #sql: SqlStorage;
  #subscribers: Map<string, SubscriberRow> | null = null;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
    // Tables made before undelivered messages were reported get their columns.
    const messageColumns = sql.exec("PRAGMA table_info(messages)").toArray();
    if (!messageColumns.some((c) => c.name === "queued_at")) {
      sql.exec("ALTER TABLE messages ADD COLUMN queued_at INTEGER NOT NULL DEFAULT 0");
      sql.exec("ALTER TABLE messages ADD COLUMN noticed INTEGER NOT NULL DEFAULT 0");
    }
  }

  /** The session's record (older records get the defaults of fields added since), or null. */
  loadRecord(): SessionRecord | null {
    const row = this.#sql.exec("SELECT v FROM meta WHERE k = 'session'").toArray()[0];
    return row ? decodeRecord(SESSION_RECORD, String(row.v)) : null;
  }

  saveRecord(record: SessionRecord): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO meta (k, v) VALUES ('session', ?)",
      encodeRecord(SESSION_RECORD, record),
    );
  }

  /** Index the next event gets (one past the newest stored). */
  nextEventIndex(): number {
    return Number(this.#sql.exec("SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM events").one().n);
  }

  appendEvent(index: number, body: string): void {
    this.#sql.exec("INSERT INTO events (idx, body) VALUES (?, ?)", index, body);
  }

  /** Event bodies (JSON text) with index >= `since`, oldest first. */
  eventsSince(since: number, limit: number): string[] {
    return this.#sql
      .exec("SELECT body FROM events WHERE idx >= ? ORDER BY idx LIMIT ?", since, limit)
      .toArray()
      .map((r) => String(r.body));
  }

  queueMessage(seq: number, text: string, now: number): void {
    this.#sql.exec("INSERT INTO messages (seq, text, queued_at) VALUES (?, ?, ?)", seq, text, now);
  }

  /** Messages not yet acknowledged by the host, oldest first. */
  pendingMessages(): { seq: number; text: string }[] {
    return this.#sql
      .exec("SELECT seq, text FROM messages ORDER BY seq")
      .toArray()
      .map((r) => ({ seq: Number(r.seq), text: String(r.text) }));
  }

  /** Drops messages the host has delivered to the droid; returns those reported as undelivered before. */
  ackMessages(upTo: number): number[] {
    const noticed = this.#sql
      .exec("SELECT seq FROM messages WHERE seq <= ? AND noticed = 1 ORDER BY seq", upTo)
      .toArray()
      .map((r) => Number(r.seq));
    this.#sql.exec("DELETE FROM messages WHERE seq <= ?", upTo);
    return noticed;
  }

  /** The oldest time a message not yet reported as undelivered was queued, or null. */
  oldestUnnoticedMessage(): number | null {
    const row = this.#sql.exec("SELECT MIN(queued_at) AS t FROM messages WHERE noticed = 0").toArray()[0];
    return row && row.t !== null ? Number(row.t) : null;
  }

  /** Messages queued at or before `before` and not reported yet: marks them reported and returns them. */
  takeOverdueMessages(before: number): { seq: number; queuedAt: number }[] {
    const rows = this.#sql
      .exec("SELECT seq, queued_at FROM messages WHERE noticed = 0 AND queued_at <= ? ORDER BY seq", before)
      .toArray()
      .map((r) => ({ seq: Number(r.seq), queuedAt: Number(r.queued_at) }));
    if (rows.length > 0)
      this.#sql.exec("UPDATE messages SET noticed = 1 WHERE noticed = 0 AND queued_at <= ?", before);
    return rows;
  }

  upsertSubscriber(row: SubscriberRow): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO subscribers (mcp_session_id, state, changed_at) VALUES (?, ?, ?)",
      row.mcpSessionId,
      row.state,
      row.changedAt,
    );
    this.#cachedSubscribers().set(row.mcpSessionId, row);
  }

  subscriber(mcpSessionId: string): SubscriberRow | null {
    return this.#cachedSubscribers().get(mcpSessionId) ?? null;
  }

  subscribers(): SubscriberRow[] {
    return [...this.#cachedSubscribers().values()];
  }

  removeSubscriber(mcpSessionId: string): void {
    this.#sql.exec("DELETE FROM subscribers WHERE mcp_session_id = ?", mcpSessionId);
    this.#cachedSubscribers().delete(mcpSessionId);
  }

  #cachedSubscribers(): Map<string, SubscriberRow> {
    this.#subscribers ??= new Map(
      this.#sql
        .exec("SELECT * FROM subscribers")
        .toArray()
        .map((r) => [String(r.mcp_session_id), toSubscriber(r)]),
    );
    return this.#subscribers;
  }
}
