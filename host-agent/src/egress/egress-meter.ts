/**
 * Counts what one principal (a session, or the project's commands) sends and receives through
 * the gate, per host and port, and reports the totals at most once per interval (and once more
 * when asked to flush), so a busy download costs one report a second, not one per chunk.
 */

import { networkSubject } from "../../../protocol/network.js";
import {
  MAX_REPORTED_HOSTS,
  type NetworkHostTotals,
  type NetworkUsage,
} from "../../../protocol/network-activity.js";

/** Most hosts counted per principal; beyond it, new hosts count in one "other" bucket. */
const MAX_COUNTED_HOSTS = 1_000;

export class EgressMeter {
  readonly #hosts = new Map<string, NetworkHostTotals>();
  readonly #other: Omit<NetworkHostTotals, "host" | "port"> = {
    connections: 0,
    bytes_out: 0,
    bytes_in: 0,
    blocked: 0,
  };
  readonly #report: (usage: NetworkUsage) => void;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #dirty = false;

  constructor(report: (usage: NetworkUsage) => void, intervalMs = 1_000) {
    this.#report = report;
    this.#intervalMs = intervalMs;
  }

  /** A connection to `host:port` opened. */
  connected(host: string, port: number): void {
    this.#entry(host, port).connections += 1;
    this.#changed();
  }

  /** Counts the bytes of one connection to `host:port` (out: towards the host), without a lookup per chunk. */
  counter(host: string, port: number): { add(out: number, inbound: number): void } {
    const entry = this.#entry(host, port);
    return {
      add: (out, inbound) => {
        entry.bytes_out += out;
        entry.bytes_in += inbound;
        this.#changed();
      },
    };
  }

  /** A connection to `host:port` was refused. */
  blocked(host: string, port: number): void {
    this.#entry(host, port).blocked += 1;
    this.#changed();
  }

  /** The totals as a report: the busiest hosts, the rest summed. */
  totals(): NetworkUsage {
    const all = [...this.#hosts.values()].sort(
      (a, b) => b.bytes_in + b.bytes_out - (a.bytes_in + a.bytes_out) || b.connections - a.connections,
    );
    const hosts = all.slice(0, MAX_REPORTED_HOSTS);
    const other = { ...this.#other };
    for (const rest of all.slice(MAX_REPORTED_HOSTS)) {
      other.connections += rest.connections;
      other.bytes_out += rest.bytes_out;
      other.bytes_in += rest.bytes_in;
      other.blocked += rest.blocked;
    }
    const anyOther = other.connections + other.blocked + other.bytes_in + other.bytes_out > 0;
    return { hosts: hosts.map((h) => ({ ...h })), ...(anyOther ? { other } : {}) };
  }

  /** Reports now when anything changed since the last report. */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#report(this.totals());
  }

  /** Stops reporting (what changed since the last report is flushed first). */
  close(): void {
    this.flush();
  }

  #entry(host: string, port: number): Omit<NetworkHostTotals, "host" | "port"> {
    const key = networkSubject(host, port);
    const known = this.#hosts.get(key);
    if (known) return known;
    if (this.#hosts.size >= MAX_COUNTED_HOSTS) return this.#other;
    const entry: NetworkHostTotals = { host, port, connections: 0, bytes_out: 0, bytes_in: 0, blocked: 0 };
    this.#hosts.set(key, entry);
    return entry;
  }

  #changed(): void {
    this.#dirty = true;
    if (this.#timer) return;
    this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
    this.#timer.unref();
  }
}
