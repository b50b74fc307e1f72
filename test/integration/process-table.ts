/**
 * The machine's processes, read from /proc (Linux): to find what a run started and to prove it is
 * gone. A process is named by pid and start time, so a recycled pid is never taken for it.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** Clock ticks since boot: with the pid, names one process for good. */
  startTime: string;
  /** argv joined with spaces. */
  cmdline: string;
}

/** One process, or undefined if it is gone. */
export function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesized command name: state ppid pgrp session ... (starttime is 20th).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    return {
      pid,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      state: fields[0] ?? "?",
      startTime: fields[19] ?? "",
      cmdline,
    };
  } catch {
    return undefined;
  }
}

/** Every process on the machine. */
export function listProcesses(): ProcessInfo[] {
  const all: ProcessInfo[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const info = readProcess(Number(entry));
    if (info) all.push(info);
  }
  return all;
}

/** The processes below `rootPid` (children, grandchildren …), as they are now. */
export function descendantsOf(rootPid: number, all = listProcesses()): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  let parents = new Set([rootPid]);
  while (parents.size > 0) {
    const next = all.filter((p) => parents.has(p.ppid));
    found.push(...next);
    parents = new Set(next.map((p) => p.pid));
  }
  return found;
}

/** Whether this very process still runs (a zombie does not: it holds nothing but its pid). */
export function stillRunning(process: ProcessInfo): boolean {
  const now = readProcess(process.pid);
  return now !== undefined && now.startTime === process.startTime && now.state !== "Z" && now.state !== "X";
}

/** Running processes in any of `pgids` (orphans that left their parent included). */
export function runningInGroups(pgids: Set<number>): ProcessInfo[] {
  return listProcesses().filter((p) => pgids.has(p.pgid) && p.state !== "Z" && p.state !== "X");
}
