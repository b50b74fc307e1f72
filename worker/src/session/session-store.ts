import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { SessionEvent } from "../../../protocol/events.js";
import type { SessionRecord } from "./session-record.js";

/** A caller tool call the session knows about, waiting or done. */
export interface CallRow {
  requestId: string;
  callId: string;
  tool: string;
  deadline: number;
  state: "waiting" | "done";
  outcome: CallerToolOutcome | null;
  doneAt: number | null;
}

/** How an MCP session subscribed to this session is doing. */
export type SubscriberState = "idle" | "live" | "dropped";

export interface SubscriberRow {
  mcpSessionId: string;
  state: SubscriberState;
  changedAt: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (idx INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  request_id TEXT PRIMARY KEY, call_id TEXT NOT NULL UNIQUE, tool TEXT NOT NULL,
  deadline INTEGER NOT NULL, state TEXT NOT NULL, outcome TEXT, done_at INTEGER);
CREATE INDEX IF NOT EXISTS calls_deadline ON calls (state, deadline);
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subscribers (mcp_session_id TEXT PRIMARY KEY, state TEXT NOT NULL, changed_at INTEGER NOT NULL);
`;

type Row = Record<string, SqlStorageValue>;

function toCall(row: Row): CallRow {
  return {
    requestId: String(row.request_id),
    callId: String(row.call_id),
    tool: String(row.tool),
    deadline: Number(row.deadline),
    state: row.state === "done" ? "done" : "waiting",
    outcome: row.outcome === null ? null : (JSON.parse(String(row.outcome)) as CallerToolOutcome),
    doneAt: row.done_at === null ? null : Number(row.done_at),
  };
}

/** The SQLite tables of one SessionDurableObject. All calls are synchronous (DO SQLite). */
export class SessionStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  loadRecord(): SessionRecord | null {
    const row = this.#sql.exec("SELECT v FROM meta WHERE k = 'session'").toArray()[0];
    return row ? (JSON.parse(String(row.v)) as SessionRecord) : null;
  }

  saveRecord(record: SessionRecord): void {
    this.#sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('session', ?)", JSON.stringify(record));
  }

  /** Index the next event gets (one past the newest stored). */
  nextEventIndex(): number {
    return Number(this.#sql.exec("SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM events").one().n);
  }

  appendEvent(event: SessionEvent): void {
    this.#sql.exec("INSERT INTO events (idx, body) VALUES (?, ?)", event.index, JSON.stringify(event));
  }

  /** Event bodies (JSON text) with index >= `since`, oldest first. */
  eventsSince(since: number, limit: number): string[] {
    return this.#sql
      .exec("SELECT body FROM events WHERE idx >= ? ORDER BY idx LIMIT ?", since, limit)
      .toArray()
      .map((r) => String(r.body));
  }

  insertCall(call: Omit<CallRow, "state" | "outcome" | "doneAt">): void {
    this.#sql.exec(
      "INSERT INTO calls (request_id, call_id, tool, deadline, state) VALUES (?, ?, ?, ?, 'waiting')",
      call.requestId,
      call.callId,
      call.tool,
      call.deadline,
    );
  }

  callByRequestId(requestId: string): CallRow | null {
    const row = this.#sql.exec("SELECT * FROM calls WHERE request_id = ?", requestId).toArray()[0];
    return row ? toCall(row) : null;
  }

  callByCallId(callId: string): CallRow | null {
    const row = this.#sql.exec("SELECT * FROM calls WHERE call_id = ?", callId).toArray()[0];
    return row ? toCall(row) : null;
  }

  /** Marks a waiting call done; false when it was not waiting (answered at most once). */
  completeCall(requestId: string, outcome: CallerToolOutcome, now: number): boolean {
    const cursor = this.#sql.exec(
      "UPDATE calls SET state = 'done', outcome = ?, done_at = ? WHERE request_id = ? AND state = 'waiting'",
      JSON.stringify(outcome),
      now,
      requestId,
    );
    return cursor.rowsWritten > 0;
  }

  waitingCalls(): CallRow[] {
    return this.#sql
      .exec("SELECT * FROM calls WHERE state = 'waiting' ORDER BY deadline")
      .toArray()
      .map(toCall);
  }

  countWaiting(): number {
    return Number(this.#sql.exec("SELECT COUNT(*) AS n FROM calls WHERE state = 'waiting'").one().n);
  }

  expiredCalls(now: number): CallRow[] {
    return this.#sql
      .exec("SELECT * FROM calls WHERE state = 'waiting' AND deadline <= ? ORDER BY deadline", now)
      .toArray()
      .map(toCall);
  }

  earliestDeadline(): number | null {
    const row = this.#sql.exec("SELECT MIN(deadline) AS d FROM calls WHERE state = 'waiting'").one();
    return row.d === null ? null : Number(row.d);
  }

  /** Forgets finished calls older than `before` (after which their ids count as unknown). */
  pruneDoneCalls(before: number): void {
    this.#sql.exec("DELETE FROM calls WHERE state = 'done' AND done_at < ?", before);
  }

  earliestDoneAt(): number | null {
    const row = this.#sql.exec("SELECT MIN(done_at) AS d FROM calls WHERE state = 'done'").one();
    return row.d === null ? null : Number(row.d);
  }

  queueMessage(seq: number, text: string): void {
    this.#sql.exec("INSERT INTO messages (seq, text) VALUES (?, ?)", seq, text);
  }

  messagesAfter(seq: number): { seq: number; text: string }[] {
    return this.#sql
      .exec("SELECT seq, text FROM messages WHERE seq > ? ORDER BY seq", seq)
      .toArray()
      .map((r) => ({ seq: Number(r.seq), text: String(r.text) }));
  }

  /** Drops messages the host has delivered to the droid. */
  ackMessages(upTo: number): void {
    this.#sql.exec("DELETE FROM messages WHERE seq <= ?", upTo);
  }

  upsertSubscriber(row: SubscriberRow): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO subscribers (mcp_session_id, state, changed_at) VALUES (?, ?, ?)",
      row.mcpSessionId,
      row.state,
      row.changedAt,
    );
  }

  subscriber(mcpSessionId: string): SubscriberRow | null {
    const row = this.#sql
      .exec("SELECT * FROM subscribers WHERE mcp_session_id = ?", mcpSessionId)
      .toArray()[0];
    return row
      ? { mcpSessionId, state: row.state as SubscriberState, changedAt: Number(row.changed_at) }
      : null;
  }

  subscribers(): SubscriberRow[] {
    return this.#sql
      .exec("SELECT * FROM subscribers")
      .toArray()
      .map((r) => ({
        mcpSessionId: String(r.mcp_session_id),
        state: r.state as SubscriberState,
        changedAt: Number(r.changed_at),
      }));
  }

  removeSubscriber(mcpSessionId: string): void {
    this.#sql.exec("DELETE FROM subscribers WHERE mcp_session_id = ?", mcpSessionId);
  }
}
