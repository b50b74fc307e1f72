import { decodeRecord, encodeRecord } from "../objects/stored-record.js";
import { JOB_RECORD, type JobRecord } from "./job-record.js";

const SCHEMA = "CREATE TABLE IF NOT EXISTS job (k TEXT PRIMARY KEY, v TEXT NOT NULL);";

/**
 * Most bytes of a job's outcome that are stored. A larger result (an exec's output can reach
 * 2 MiB) is kept whole in memory for the calls waiting on the job, and stored without its
 * value, saying so.
 */
export const MAX_STORED_RESULT_BYTES = 512 * 1024;

/** A job's one record, in its object's SQLite storage. */
export class JobStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  load(): JobRecord | null {
    const row = this.#sql.exec("SELECT v FROM job WHERE k = 'record'").toArray()[0];
    return row ? decodeRecord(JOB_RECORD, String(row.v)) : null;
  }

  save(record: JobRecord): void {
    let text = encodeRecord(JOB_RECORD, record);
    if (text.length > MAX_STORED_RESULT_BYTES && record.result !== undefined) {
      const bytes = JSON.stringify(record.result).length;
      const note = { result_not_kept: `the result was ${bytes} bytes, more than a job keeps` };
      text = encodeRecord(JOB_RECORD, { ...record, result: note });
    }
    this.#sql.exec("INSERT OR REPLACE INTO job (k, v) VALUES ('record', ?)", text);
  }
}
