/**
 * Keeps the runner alive when agents use up the container's memory. The kernel acts only at the
 * limit itself, and before it kills anything it reclaims what it can — the file pages of every
 * program, the runner's too — so sustained pressure just under the limit stalls every process
 * in the container, and a runner that misses its pings is dropped by the host with every session
 * of the project. The guard acts first: twice a second it reads the container's working set, and
 * once it comes within a reserve of the limit it ends the biggest process of the uid (a session's,
 * or the commands') holding the most memory in all — never the runner's own (root's) — and tells
 * whose it was. Counting by uid, a session cannot spread its memory over many small processes to
 * have another session's agent ended in its place. The reserve is the room the runner and the
 * kernel's caches keep.
 */
import type { Logger } from "../../../lib/log.js";
import type { MemoryReading } from "./memory-cgroup.js";
import type { ProcessInfo } from "./process-table.js";

export interface MemoryVictim {
  process: ProcessInfo;
  /** The container's memory when the guard acted. */
  reading: MemoryReading;
}

export interface MemoryGuardOptions {
  read(): Promise<MemoryReading | null>;
  processes(): Promise<ProcessInfo[]>;
  /** Sends SIGKILL to `pid`. */
  kill(pid: number): void;
  /** A process was ended: whose it was is the runner's to say. */
  ended(victim: MemoryVictim): void;
  logger: Logger;
  /** The runner's own uid: its processes are never chosen. */
  ownUid: number;
  intervalMs?: number;
  /** After ending a process, how long its memory is given to be freed before the next judgement. */
  settleMs?: number;
}

const MiB = 1024 * 1024;

/** The room kept free: a tenth of the limit, at least 32 MiB, at most 128 MiB. */
export function memoryReserve(limitBytes: number): number {
  return Math.min(128 * MiB, Math.max(32 * MiB, Math.round(limitBytes / 10)));
}

export class MemoryGuard {
  readonly #o: MemoryGuardOptions;
  #timer: NodeJS.Timeout | null = null;
  #busy = false;
  #quietUntil = 0;

  constructor(options: MemoryGuardOptions) {
    this.#o = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.check(), this.#o.intervalMs ?? 500);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One judgement: ends the biggest process when the working set is within the reserve of the limit. */
  async check(): Promise<MemoryVictim | null> {
    if (this.#busy || Date.now() < this.#quietUntil) return null;
    this.#busy = true;
    try {
      const reading = await this.#o.read();
      if (reading === null) return null;
      if (reading.workingSetBytes < reading.limitBytes - memoryReserve(reading.limitBytes)) return null;
      const biggest = pickVictim(await this.#o.processes(), this.#o.ownUid);
      if (biggest === null) return null;
      try {
        this.#o.kill(biggest.pid);
      } catch (err) {
        this.#o.logger.warn(
          { pid: biggest.pid, err: (err as Error).message },
          "memory guard could not end a process",
        );
        return null;
      }
      this.#quietUntil = Date.now() + (this.#o.settleMs ?? 2_000);
      const victim = { process: biggest, reading };
      this.#o.logger.warn(
        {
          pid: biggest.pid,
          uid: biggest.uid,
          name: biggest.name,
          rss_mib: Math.round(biggest.rssBytes / MiB),
          working_set_mib: Math.round(reading.workingSetBytes / MiB),
          limit_mib: Math.round(reading.limitBytes / MiB),
        },
        "out of memory: ended the process holding the most",
      );
      this.#o.ended(victim);
      return victim;
    } finally {
      this.#busy = false;
    }
  }
}

/** The biggest process of the uid holding the most memory in all, never `ownUid`'s; null: none. */
export function pickVictim(processes: readonly ProcessInfo[], ownUid: number): ProcessInfo | null {
  const byUid = new Map<number, { total: number; biggest: ProcessInfo }>();
  for (const p of processes) {
    if (p.uid === ownUid || p.rssBytes <= 0) continue;
    const entry = byUid.get(p.uid);
    if (entry === undefined) byUid.set(p.uid, { total: p.rssBytes, biggest: p });
    else {
      entry.total += p.rssBytes;
      if (p.rssBytes > entry.biggest.rssBytes) entry.biggest = p;
    }
  }
  let chosen: { total: number; biggest: ProcessInfo } | null = null;
  for (const entry of byUid.values()) if (chosen === null || entry.total > chosen.total) chosen = entry;
  return chosen?.biggest ?? null;
}

/** "name (pid N) held 300 MiB of the container's 512 MiB (limits.memory_mb)". */
export function describeVictim(victim: MemoryVictim): string {
  const { process: p, reading } = victim;
  return (
    `out of memory: ${p.name || "a process"} (pid ${p.pid}) held ${Math.round(p.rssBytes / MiB)} MiB when ` +
    `the container was at ${Math.round(reading.workingSetBytes / MiB)} MiB of its ` +
    `${Math.round(reading.limitBytes / MiB)} MiB limit (the project's limits.memory_mb); it was ended so ` +
    "the project's other sessions keep running"
  );
}
