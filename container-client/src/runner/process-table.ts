/**
 * The container's processes as `/proc` shows them to the runner (status files are readable by
 * all): pid, parent, real uid, name and resident memory. The memory guard picks what to end from
 * it; `procRoot` is a directory of the same shape in tests.
 */
import { readdir, readFile } from "node:fs/promises";

export interface ProcessInfo {
  pid: number;
  ppid: number;
  uid: number;
  name: string;
  rssBytes: number;
}

export async function readProcesses(procRoot = "/proc"): Promise<ProcessInfo[]> {
  const entries = await readdir(procRoot).catch(() => [] as string[]);
  const found = await Promise.all(
    entries
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) =>
        parseStatus(Number(name), await readFile(`${procRoot}/${name}/status`, "utf8").catch(() => "")),
      ),
  );
  return found.filter((p): p is ProcessInfo => p !== null);
}

/** One `/proc/<pid>/status`; null when it is gone or unreadable. */
export function parseStatus(pid: number, status: string): ProcessInfo | null {
  const field = (key: string) => new RegExp(`^${key}:\\s+(.*)$`, "m").exec(status)?.[1];
  const uid = field("Uid")?.split(/\s+/)[0];
  if (uid === undefined) return null;
  return {
    pid,
    ppid: Number(field("PPid") ?? 0),
    uid: Number(uid),
    name: field("Name") ?? "",
    // Kernel threads and zombies have no VmRSS.
    rssBytes: Number(/^(\d+)\s*kB$/.exec(field("VmRSS") ?? "")?.[1] ?? 0) * 1024,
  };
}
