/**
 * Where a benchmark's CPU goes, by the part of the local stack that spent it: read from /proc
 * (Linux; elsewhere there is nothing to read and the bench says so). Two cores serve the whole
 * stack, so the CPU one relayed call costs, summed over every process, bounds the calls per
 * second; and the stack includes the Worker's local server's node process (Miniflare, which
 * passes workerd's output on), which a deployed Worker does not have.
 */
import { readdirSync, readFileSync } from "node:fs";

/** The parts of the stack, in the order they are printed. */
export const CPU_PARTS = ["caller", "worker", "host-agent", "container", "dev-server"] as const;
export type CpuPart = (typeof CPU_PARTS)[number];

export const CPU_PART_NAMES: Record<CpuPart, string> = {
  caller: "the caller and droid driver (this bench process)",
  worker: "the Worker (workerd)",
  "host-agent": "the host-agent",
  container: "the container (runner, droid, its MCP server)",
  "dev-server": "the local server's node process (Miniflare)",
};

export interface StackPids {
  /** The Worker's local server (scripts/stack/wrangler-dev-main.ts; its workerd is its descendant). */
  devServer: number;
  hostAgent: number;
}

interface ProcEntry {
  pid: number;
  ppid: number;
  name: string;
  cpuTicks: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux.

function readProc(pid: number): ProcEntry | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return {
      pid,
      ppid: Number(fields[1]),
      name: stat.slice(stat.indexOf("(") + 1, close),
      cpuTicks: Number(fields[11]) + Number(fields[12]),
    };
  } catch {
    return null; // it ended between the listing and the read
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** CPU milliseconds spent so far by each part of the stack (processes that ended are not counted). */
export type CpuUse = Record<CpuPart, number>;

/**
 * Reads every process's CPU time and sorts it into the parts of the stack. The container's
 * processes are known by their programs (the runner and MCP server, and the scripted droid),
 * wherever they run: in Docker, or as the host-agent's children.
 */
export function cpuUse(pids: StackPids): CpuUse | null {
  let names: string[];
  try {
    names = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  const procs = names.map((name) => readProc(Number(name))).filter((p): p is ProcEntry => p !== null);
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const under = (pid: number, ancestor: number): boolean => {
    for (let at = byPid.get(pid), hops = 0; at && hops < 64; at = byPid.get(at.ppid), hops++)
      if (at.pid === ancestor) return true;
    return false;
  };
  const use: CpuUse = Object.fromEntries(CPU_PARTS.map((part) => [part, 0])) as CpuUse;
  for (const proc of procs) {
    const ms = proc.cpuTicks * TICK_MS;
    if (proc.pid === process.pid) use.caller += ms;
    else if (proc.pid === pids.hostAgent) use["host-agent"] += ms;
    else if (proc.name === "workerd" && under(proc.pid, pids.devServer)) use.worker += ms;
    // The server's node process itself (and the bundling it ran at start).
    else if (under(proc.pid, pids.devServer)) use["dev-server"] += ms;
    else if (proc.name === "node" && /(container-client|scripted-droid)\.mjs/.test(cmdline(proc.pid)))
      use.container += ms;
  }
  return use;
}

/** CPU milliseconds per call of each part between two readings, and their sum. */
export function cpuPerCall(before: CpuUse, after: CpuUse, calls: number): { parts: CpuUse; total: number } {
  const parts = Object.fromEntries(
    CPU_PARTS.map((part) => [part, Math.max(0, after[part] - before[part]) / calls]),
  ) as CpuUse;
  return { parts, total: CPU_PARTS.reduce((sum, part) => sum + parts[part], 0) };
}
