import type { SessionEvent } from "../../../protocol/events.js";
import type { SessionStore } from "./session-store.js";

/** Event body before the session stamps it with its id, index and time. */
export type NewEvent = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, "session_id" | "index" | "ts">
    : never
  : never;

/** Where events go as they happen. */
export interface EventSinks {
  /** Plain SSE/WebSocket subscribers (the JSON text and the event's index). */
  broadcast(json: string, index: number): void;
  /** The owner's MCP sessions. */
  toMcp(event: SessionEvent): void;
  /** Runs once the event is stored (readers waiting for it read again). */
  appended(): void;
}

/**
 * The session's event log: a monotonic `index`, kept in SQLite for `since_index` reads and
 * resumption, fanned out to every subscriber as it is appended.
 */
export class EventLog {
  readonly #store: SessionStore;
  readonly #sinks: EventSinks;
  readonly #sessionId: () => string;
  #nextIndex: number;

  constructor(store: SessionStore, sinks: EventSinks, sessionId: () => string) {
    this.#store = store;
    this.#sinks = sinks;
    this.#sessionId = sessionId;
    this.#nextIndex = store.nextEventIndex();
  }

  /** Index the next event will get. */
  get nextIndex(): number {
    return this.#nextIndex;
  }

  /**
   * Appends an event and fans it out. The fan-out is sent before the append is written so it
   * does not wait for the storage commit (an output gate holds only messages sent after a write);
   * a crash in between loses at most a log entry whose notification went out. A caller tool
   * request lost that way is re-created under the same request_id when the host re-sends the call.
   */
  emit(body: NewEvent): SessionEvent {
    const event = {
      ...body,
      session_id: this.#sessionId(),
      index: this.#nextIndex,
      ts: new Date().toISOString(),
    } as SessionEvent;
    this.#nextIndex += 1;
    const json = JSON.stringify(event);
    this.#sinks.broadcast(json, event.index);
    this.#sinks.toMcp(event);
    this.#store.appendEvent(event.index, json);
    this.#sinks.appended();
    return event;
  }

  /** Events with index >= `since`, oldest first, at most `limit`. */
  read(since: number, limit: number): SessionEvent[] {
    return this.#store.eventsSince(since, limit).map((body) => JSON.parse(body) as SessionEvent);
  }
}
