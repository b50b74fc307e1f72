/**
 * Where a benchmark's CPU goes, by the part of the local stack that spent it: read from /proc
 * (Linux; elsewhere there is nothing to read and the bench says so). Two cores serve the whole
 * stack, so the CPU one relayed call costs, summed over every process, bounds the calls per
 * second; and the stack includes wrangler dev's own machinery (its node process, with esbuild,
 * and the workerd that runs its dev proxy), which a deployed Worker does not have.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The parts of the stack, in the order they are printed. */
export const CPU_PARTS = [
  "caller",
  "worker",
  "host-agent",
  "container",
  "wrangler-node",
  "wrangler-proxy",
] as const;
export type CpuPart = (typeof CPU_PARTS)[number];

export const CPU_PART_NAMES: Record<CpuPart, string> = {
  caller: "the caller and droid driver (this bench process)",
  worker: "the Worker (workerd)",
  "host-agent": "the host-agent",
  container: "the container (runner, droid, its MCP server)",
  "wrangler-node": "wrangler dev's own processes (node, esbuild)",
  "wrangler-proxy": "wrangler dev's proxy workerd",
};

export interface StackPids {
  /** The Worker's dev process (scripts/stack/wrangler-dev-main.ts; its workerds are its descendants). */
  wrangler: number;
  hostAgent: number;
  /** The port wrangler dev listens on: the workerd that owns it is the dev proxy. */
  wranglerPort: number;
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

/** Socket inodes listening on `port` (IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(`:${hex}`) && cols[3] === "0A" && cols[9]) inodes.add(cols[9]);
    }
  }
  return inodes;
}

function ownsSocket(pid: number, inodes: Set<string>): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        return inodes.has(target.slice("socket:[".length, -1));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
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
  const proxyInodes = listeningInodes(pids.wranglerPort);
  const use: CpuUse = Object.fromEntries(CPU_PARTS.map((part) => [part, 0])) as CpuUse;
  for (const proc of procs) {
    const ms = proc.cpuTicks * TICK_MS;
    if (proc.pid === process.pid) use.caller += ms;
    else if (proc.pid === pids.hostAgent) use["host-agent"] += ms;
    else if (proc.name === "workerd" && under(proc.pid, pids.wrangler))
      use[ownsSocket(proc.pid, proxyInodes) ? "wrangler-proxy" : "worker"] += ms;
    // The dev process itself, and esbuild.
    else if (under(proc.pid, pids.wrangler)) use["wrangler-node"] += ms;
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
