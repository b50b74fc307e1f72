import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";
import type { SessionRecord } from "./session-record.js";

/**
 * A caller tool call the session knows about, waiting or done. Its id is the call id the
 * container-client chose, which is also the `request_id` the caller answers.
 */
export interface CallRow {
  callId: string;
  tool: string;
  /** The droid's arguments ({} for calls stored before they were kept, or decided on arrival). */
  arguments: JsonObject;
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

/**
 * Every query on a relayed call's path is an index lookup, so its cost does not grow with the
 * session's history (events, finished calls): `calls` by primary key, waiting calls by
 * (state, deadline), finished ones by (state, done_at) for pruning; subscribers are cached.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (idx INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  call_id TEXT PRIMARY KEY, tool TEXT NOT NULL, deadline INTEGER NOT NULL,
  state TEXT NOT NULL, outcome TEXT, done_at INTEGER, arguments TEXT);
CREATE INDEX IF NOT EXISTS calls_waiting ON calls (state, deadline);
CREATE INDEX IF NOT EXISTS calls_done ON calls (state, done_at);
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subscribers (mcp_session_id TEXT PRIMARY KEY, state TEXT NOT NULL, changed_at INTEGER NOT NULL);
`;

type Row = Record<string, SqlStorageValue>;

function toCall(row: Row): CallRow {
  return {
    callId: String(row.call_id),
    tool: String(row.tool),
    arguments: typeof row.arguments === "string" ? (JSON.parse(row.arguments) as JsonObject) : {},
    deadline: Number(row.deadline),
    state: row.state === "done" ? "done" : "waiting",
    outcome: row.outcome === null ? null : (JSON.parse(String(row.outcome)) as CallerToolOutcome),
    doneAt: row.done_at === null ? null : Number(row.done_at),
  };
}

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
    // Tables made before calls kept their arguments get the column.
    const columns = sql.exec("PRAGMA table_info(calls)").toArray();
    if (!columns.some((c) => c.name === "arguments")) sql.exec("ALTER TABLE calls ADD COLUMN arguments TEXT");
    // Tables made before undelivered messages were reported get their columns.
    const messageColumns = sql.exec("PRAGMA table_info(messages)").toArray();
    if (!messageColumns.some((c) => c.name === "queued_at")) {
      sql.exec("ALTER TABLE messages ADD COLUMN queued_at INTEGER NOT NULL DEFAULT 0");
      sql.exec("ALTER TABLE messages ADD COLUMN noticed INTEGER NOT NULL DEFAULT 0");
    }
  }

  loadRecord(): SessionRecord | null {
    const row = this.#sql.exec("SELECT v FROM meta WHERE k = 'session'").toArray()[0];
    if (!row) return null;
    const record = JSON.parse(String(row.v)) as SessionRecord;
    // Records written before workspaces existed ran in the project's default workspace.
    record.workspaceId ??= "default";
    // ... and had no lifetime rules.
    record.idleTimeoutMs ??= 0;
    record.maxLifetimeMs ??= 0;
    record.lastActivityAt ??= null;
    record.completedTurnSeq ??= 0;
    // ... and lost their calls when the caller's stream went away.
    record.callerPresence ??= "stream";
    return record;
  }

  saveRecord(record: SessionRecord): void {
    this.#sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('session', ?)", JSON.stringify(record));
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

  insertCall(call: Pick<CallRow, "callId" | "tool" | "deadline" | "arguments">): void {
    this.#sql.exec(
      "INSERT INTO calls (call_id, tool, deadline, state, arguments) VALUES (?, ?, ?, 'waiting', ?)",
      call.callId,
      call.tool,
      call.deadline,
      JSON.stringify(call.arguments),
    );
  }

  /** Records a call that was decided the moment it arrived (refused), so a re-send gets the same answer. */
  insertDoneCall(call: Pick<CallRow, "callId" | "tool">, outcome: CallerToolOutcome, now: number): void {
    this.#sql.exec(
      "INSERT OR IGNORE INTO calls (call_id, tool, deadline, state, outcome, done_at) VALUES (?, ?, ?, 'done', ?, ?)",
      call.callId,
      call.tool,
      now,
      JSON.stringify(outcome),
      now,
    );
  }

  call(callId: string): CallRow | null {
    const row = this.#sql.exec("SELECT * FROM calls WHERE call_id = ?", callId).toArray()[0];
    return row ? toCall(row) : null;
  }

  /** Marks a waiting call done; false when it was not waiting (decided at most once). */
  completeCall(callId: string, outcome: CallerToolOutcome, now: number): boolean {
    const cursor = this.#sql.exec(
      "UPDATE calls SET state = 'done', outcome = ?, done_at = ? WHERE call_id = ? AND state = 'waiting'",
      JSON.stringify(outcome),
      now,
      callId,
    );
    return cursor.rowsWritten > 0;
  }

  /** Waiting calls, soonest deadline first (all of them, or the first `limit`). */
  waitingCalls(limit = -1): CallRow[] {
    return this.#sql
      .exec("SELECT * FROM calls WHERE state = 'waiting' ORDER BY deadline LIMIT ?", limit)
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
    const row = this.#sql
      .exec("SELECT deadline FROM calls WHERE state = 'waiting' ORDER BY deadline LIMIT 1")
      .toArray()[0];
    return row ? Number(row.deadline) : null;
  }

  /** Forgets finished calls done before `before` (after which their ids count as unknown). */
  pruneDoneCalls(before: number): void {
    this.#sql.exec("DELETE FROM calls WHERE state = 'done' AND done_at < ?", before);
  }

  earliestDoneAt(): number | null {
    const row = this.#sql
      .exec("SELECT done_at FROM calls WHERE state = 'done' ORDER BY done_at LIMIT 1")
      .toArray()[0];
    return row ? Number(row.done_at) : null;
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
