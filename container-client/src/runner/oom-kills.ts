/**
 * How many processes the kernel has killed in this container for want of memory, from its
 * memory cgroup (v2 `memory.events`, v1 `memory.oom_control`); null where neither is readable.
 * A SIGKILL the count went up with was the kernel's, not a crash of the agent's own.
 */
import { readFile } from "node:fs/promises";

const SOURCES = ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"];

export async function oomKills(): Promise<number | null> {
  for (const path of SOURCES) {
    const text = await readFile(path, "utf8").catch(() => null);
    const match = text === null ? null : /^oom_kill (\d+)$/m.exec(text);
    if (match?.[1] !== undefined) return Number(match[1]);
  }
  return null;
}
