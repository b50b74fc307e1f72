/**
 * What an MCP session keeps in storage: its record, the droid sessions it follows and the jobs
 * its calls started (SQLite), and the outbox of messages sent on its GET stream, kept so a client
 * that reconnects with Last-Event-ID gets what it missed (bounded to the newest MAX_KEPT).
 *
 * The outbox is written with `allowUnconfirmed`: it exists for resumption, so a stream message
 * need not wait for its copy to be committed (waiting would add a storage commit to every
 * relayed call). Everything else waits as usual.
 */

import type { z } from "zod";
import { createLog, errorMessage } from "../log.js";
import { decodeRecord, encodeRecord, type RecordFormat } from "../objects/stored-record.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS subscriptions (session_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS own_jobs (job_id TEXT PRIMARY KEY, at INTEGER NOT NULL);
`;
/** How long the session remembers a job it started (a job's outcome is kept as long). */
const OWN_JOB_TTL_MS = 24 * 60 * 60_000;
const MAX_KEPT = 2000;
const PREFIX = "outbox:";
const key = (seq: number) => `${PREFIX}${String(seq).padStart(12, "0")}`;
const UNCONFIRMED = { allowUnconfirmed: true } as const;
const log = createLog({ component: "mcp-outbox" });

/** An outbox write failed: resumption may miss that message; the live stream still got it. */
function logStorageError(err: unknown): void {
  log.error("outbox write failed", { error: errorMessage(err) });
}

export class McpStore {
  readonly #storage: DurableObjectStorage;
  #lastSeq = 0;
  /** Cached: `remember` runs on every tool call and must not write when nothing changed. */
  readonly #subscriptions: Set<string>;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    storage.sql.exec(SCHEMA);
    this.#subscriptions = new Set(
      storage.sql
        .exec("SELECT session_id FROM subscriptions")
        .toArray()
        .map((r) => String(r.session_id)),
    );
  }

  /** Reads the outbox position; call once inside blockConcurrencyWhile. */
  async load(): Promise<void> {
    const last = await this.#storage.list<string>({ prefix: PREFIX, reverse: true, limit: 1 });
    const [lastKey] = last.keys();
    this.#lastSeq = lastKey ? Number(lastKey.slice(PREFIX.length)) : 0;
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Stores a stream message; returns its event id. */
  append(message: string): number {
    this.#lastSeq += 1;
    const seq = this.#lastSeq;
    this.#storage.put(key(seq), message, UNCONFIRMED).catch(logStorageError);
    if (seq % 100 === 0 && seq > MAX_KEPT) {
      const stale = Array.from({ length: 100 }, (_, i) => key(seq - MAX_KEPT - i));
      this.#storage.delete(stale, UNCONFIRMED).catch(logStorageError);
    }
    return seq;
  }

  /** Stream messages after event id `seq`, oldest first. */
  async after(seq: number): Promise<{ seq: number; message: string }[]> {
    const rows = await this.#storage.list<string>({ prefix: PREFIX, start: key(seq + 1), limit: MAX_KEPT });
    return [...rows].map(([k, message]) => ({ seq: Number(k.slice(PREFIX.length)), message }));
  }

  /** A stored record by name, read through its format (parsed, never cast); null when absent. */
  getMeta<S extends z.ZodType>(name: string, format: RecordFormat<S>): z.output<S> | null {
    const row = this.#storage.sql.exec("SELECT v FROM meta WHERE k = ?", name).toArray()[0];
    return row ? decodeRecord(format, String(row.v)) : null;
  }

  setMeta<S extends z.ZodType>(name: string, format: RecordFormat<S>, value: z.input<S>): void {
    this.#storage.sql.exec(
      "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)",
      name,
      encodeRecord(format, value),
    );
  }

  subscriptions(): string[] {
    return [...this.#subscriptions];
  }

  addSubscription(sessionId: string): void {
    if (this.#subscriptions.has(sessionId)) return;
    this.#subscriptions.add(sessionId);
    this.#storage.sql.exec("INSERT OR IGNORE INTO subscriptions (session_id) VALUES (?)", sessionId);
  }

  /**
   * Notes that a call of this session started job `jobId` (it hears the job's events directly,
   * and so skips their copies in the logs of sessions it follows).
   */
  addOwnJob(jobId: string): void {
    if (this.isOwnJob(jobId)) return;
    const now = Date.now();
    this.#storage.sql.exec("DELETE FROM own_jobs WHERE at < ?", now - OWN_JOB_TTL_MS);
    this.#storage.sql.exec("INSERT OR IGNORE INTO own_jobs (job_id, at) VALUES (?, ?)", jobId, now);
  }

  isOwnJob(jobId: string): boolean {
    return this.#storage.sql.exec("SELECT 1 FROM own_jobs WHERE job_id = ?", jobId).toArray().length > 0;
  }

  /** Forgets everything (the session was terminated). */
  async clear(): Promise<void> {
    await this.#storage.deleteAll();
    this.#storage.sql.exec(SCHEMA);
    this.#subscriptions.clear();
    this.#lastSeq = 0;
  }
}
