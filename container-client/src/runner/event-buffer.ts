/**
 * The runner's outbox of agent events: numbered from 1, kept until the host-agent says the
 * session object stored them, re-sent after every reconnect. Bounded: while the host-agent is
 * away for long, the oldest output is dropped (never status events) and a note says how much.
 */
import type { AgentEvent, AgentEventBody } from "../../../protocol/agent-events.js";
import { jsonBytes } from "../../../protocol/json.js";

export interface EventBufferOptions {
  maxEvents?: number;
  maxBytes?: number;
}

export class EventBuffer {
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  #events: { event: AgentEvent; bytes: number }[] = [];
  #bytes = 0;
  #nextSeq = 1;
  #acked = 0;
  #dropped = 0;

  constructor(options: EventBufferOptions = {}) {
    this.#maxEvents = options.maxEvents ?? 10_000;
    this.#maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  }

  /** Highest seq the session object has stored. */
  get acked(): number {
    return this.#acked;
  }

  /** Events not yet acknowledged. */
  get size(): number {
    return this.#events.length;
  }

  /** Numbers and keeps an event; returns what is new (to send now): a note of drops first, if any. */
  push(body: AgentEventBody): AgentEvent[] {
    const fresh: AgentEvent[] = [];
    if (this.#dropped > 0) {
      const dropped = this.#dropped;
      this.#dropped = 0;
      fresh.push(
        this.#keep({
          type: "droid_log",
          text: `[oubliette] ${dropped} output events were dropped while the host-agent was unreachable`,
        }),
      );
    }
    fresh.push(this.#keep(body));
    return fresh;
  }

  /** Drops everything up to `seq` (stored by the session object). */
  ack(seq: number): void {
    if (seq <= this.#acked) return;
    this.#acked = seq;
    while (this.#events.length > 0 && (this.#events[0]?.event.seq ?? Number.POSITIVE_INFINITY) <= seq) {
      this.#bytes -= this.#events.shift()?.bytes ?? 0;
    }
  }

  /** Every unacknowledged event, oldest first. */
  pending(): AgentEvent[] {
    return this.#events.map((e) => e.event);
  }

  #keep(body: AgentEventBody): AgentEvent {
    const event = { ...body, seq: this.#nextSeq++ } as AgentEvent;
    const bytes = jsonBytes(event);
    this.#events.push({ event, bytes });
    this.#bytes += bytes;
    this.#trim();
    return event;
  }

  #trim(): void {
    while (this.#events.length > this.#maxEvents || this.#bytes > this.#maxBytes) {
      const at = this.#events.findIndex((e) => e.event.type !== "droid_status");
      if (at < 0) return;
      const [gone] = this.#events.splice(at, 1);
      this.#bytes -= gone?.bytes ?? 0;
      this.#dropped += 1;
    }
  }
}
