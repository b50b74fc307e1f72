import { createLog, type Log } from "../log.js";
import { SessionNotFoundError } from "./session-errors.js";
import { isLive, type SessionRecord } from "./session-record.js";
import type { SessionStore } from "./session-store.js";

/**
 * The session's record as every part of the object shares it: loaded once, changed in place,
 * saved by whoever changed it. Also the object's log, which names the session once it has one.
 */
export class SessionState {
  readonly store: SessionStore;
  #record: SessionRecord | null;
  #log: Log;

  constructor(store: SessionStore) {
    this.store = store;
    this.#record = store.loadRecord();
    this.#log = createLog({ component: "session", session: this.#record?.sessionId });
  }

  get log(): Log {
    return this.#log;
  }

  /** The record, or null when this object holds no session (yet, or any more). */
  get current(): SessionRecord | null {
    return this.#record;
  }

  /** Whether the object holds a session that is still live. */
  get live(): boolean {
    return this.#record !== null && isLive(this.#record.status);
  }

  /** The record; SessionNotFoundError when there is none. */
  require(): SessionRecord {
    if (!this.#record) throw new SessionNotFoundError();
    return this.#record;
  }

  /** A new session's record, saved. */
  begin(record: SessionRecord): void {
    this.#record = record;
    this.#log = createLog({ component: "session", session: record.sessionId });
    this.save();
  }

  /** The object forgot its session (its storage is gone). */
  forget(): void {
    this.#record = null;
  }

  save(): void {
    this.store.saveRecord(this.require());
  }
}
