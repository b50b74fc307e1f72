import { decodeRecord, encodeRecord } from "../objects/stored-record.js";
import { type RunEntry, summarize, type TargetRun } from "./run-entry.js";
import { RUN_ENTRY, SCHEDULE_RECORD } from "./schedule-formats.js";
import type { ScheduleRecord } from "./schedule-record.js";

/** Runs kept in a schedule's history; older ones are dropped. */
export const HISTORY_LIMIT = 200;

/**
 * The SQLite tables of one ScheduleDurableObject: its record, its run history (newest
 * HISTORY_LIMIT), the runs waiting per target (overlap_behavior queue) and the session each
 * target's last run started (what the next run's overlap is judged by).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, run_id TEXT NOT NULL, queued_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS queue_target ON queue (target, seq);
CREATE TABLE IF NOT EXISTS last_sessions (target TEXT PRIMARY KEY, session_id TEXT NOT NULL);
`;

export interface QueuedRun {
  seq: number;
  target: string;
  runId: string;
  queuedAt: number;
}

function toQueued(r: Record<string, SqlStorageValue>): QueuedRun {
  return {
    seq: Number(r.seq),
    target: String(r.target),
    runId: String(r.run_id),
    queuedAt: Number(r.queued_at),
  };
}

export class ScheduleStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  loadRecord(): ScheduleRecord | null {
    const row = this.#sql.exec("SELECT v FROM meta WHERE k = 'schedule'").toArray()[0];
    return row ? decodeRecord(SCHEDULE_RECORD, String(row.v)) : null;
  }

  saveRecord(record: ScheduleRecord): void {
    this.#sql.exec(
      "INSERT INTO meta (k, v) VALUES ('schedule', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
      encodeRecord(SCHEDULE_RECORD, record),
    );
  }

  // ------------------------------------------------------------------ history

  addRun(entry: RunEntry): void {
    this.#sql.exec(
      "INSERT INTO runs (run_id, body) VALUES (?, ?)",
      entry.run_id,
      encodeRecord(RUN_ENTRY, entry),
    );
    this.#sql.exec("DELETE FROM runs WHERE seq <= (SELECT MAX(seq) FROM runs) - ?", HISTORY_LIMIT);
  }

  run(runId: string): RunEntry | null {
    const row = this.#sql.exec("SELECT body FROM runs WHERE run_id = ?", runId).toArray()[0];
    return row ? decodeRecord(RUN_ENTRY, String(row.body)) : null;
  }

  /** Changes what happened on one target of a run (found by its key); null when the run is gone. */
  updateTarget(
    runId: string,
    matches: (t: TargetRun) => boolean,
    change: Partial<TargetRun>,
  ): RunEntry | null {
    const entry = this.run(runId);
    if (!entry) return null;
    const updated = summarize({
      ...entry,
      targets: entry.targets.map((t) => (matches(t) ? { ...t, ...change } : t)),
    });
    this.#sql.exec("UPDATE runs SET body = ? WHERE run_id = ?", encodeRecord(RUN_ENTRY, updated), runId);
    return updated;
  }

  /** The newest runs first. */
  runs(limit: number): RunEntry[] {
    return this.#sql
      .exec("SELECT body FROM runs ORDER BY seq DESC LIMIT ?", limit)
      .toArray()
      .map((r) => decodeRecord(RUN_ENTRY, String(r.body)));
  }

  // ------------------------------------------------------------------ queue

  enqueue(target: string, runId: string, now: number): void {
    this.#sql.exec("INSERT INTO queue (target, run_id, queued_at) VALUES (?, ?, ?)", target, runId, now);
  }

  queued(target: string): QueuedRun[] {
    return this.#sql
      .exec("SELECT * FROM queue WHERE target = ? ORDER BY seq", target)
      .toArray()
      .map(toQueued);
  }

  allQueued(): QueuedRun[] {
    return this.#sql.exec("SELECT * FROM queue ORDER BY seq").toArray().map(toQueued);
  }

  dequeue(seq: number): boolean {
    return this.#sql.exec("DELETE FROM queue WHERE seq = ?", seq).rowsWritten > 0;
  }

  // ------------------------------------------------------------------ last sessions

  lastSession(target: string): string | null {
    const row = this.#sql.exec("SELECT session_id FROM last_sessions WHERE target = ?", target).toArray()[0];
    return row ? String(row.session_id) : null;
  }

  setLastSession(target: string, sessionId: string): void {
    this.#sql.exec(
      "INSERT INTO last_sessions (target, session_id) VALUES (?, ?) ON CONFLICT (target) DO UPDATE SET session_id = excluded.session_id",
      target,
      sessionId,
    );
  }

  /** Targets whose last run started this session. */
  targetsOfSession(sessionId: string): string[] {
    return this.#sql
      .exec("SELECT target FROM last_sessions WHERE session_id = ?", sessionId)
      .toArray()
      .map((r) => String(r.target));
  }

  /** Forgets the last sessions of every target but `kept`. */
  forgetTargetsExcept(kept: string[]): void {
    const keep = new Set(kept);
    for (const row of this.#sql.exec("SELECT target FROM last_sessions").toArray()) {
      const target = String(row.target);
      if (!keep.has(target)) this.#sql.exec("DELETE FROM last_sessions WHERE target = ?", target);
    }
  }

  /** A deleted schedule keeps only its record (a tombstone). */
  wipeRuns(): void {
    this.#sql.exec("DELETE FROM runs; DELETE FROM queue; DELETE FROM last_sessions;");
  }
}
