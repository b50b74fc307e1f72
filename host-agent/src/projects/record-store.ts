/**
 * One project's `project.json`, changed one read-modify-write at a time (workspace groups and
 * session uids are allocated from it, so two allocations must never see the same record).
 */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { type ProjectRecord, readRecord, writeRecord } from "./project-record.js";

export class RecordStore {
  readonly #path: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
  }

  read(): Promise<ProjectRecord> {
    return readRecord(this.#path);
  }

  /** Applies `change` to the current record and writes it; resolves with what `change` returned. */
  update<T>(change: (record: ProjectRecord) => T | Promise<T>): Promise<T> {
    const next = this.#chain.then(async () => {
      await mkdir(dirname(this.#path), { recursive: true });
      const record = await readRecord(this.#path);
      const value = await change(record);
      await writeRecord(this.#path, record);
      return value;
    });
    this.#chain = next.catch(() => {});
    return next;
  }
}
