/**
 * The container's memory as its memory cgroup counts it: the limit, and the working set — what
 * is in use less the file cache the kernel can drop at once (`inactive_file`), as `docker stats`
 * and the kubelet count it. cgroup v2 (`memory.max`, `memory.current`) or v1
 * (`memory/memory.limit_in_bytes`, `memory.usage_in_bytes`); null where there is no limit or
 * neither can be read (the process runtime, a host without memory accounting).
 */
import { readFile } from "node:fs/promises";

export interface MemoryReading {
  limitBytes: number;
  workingSetBytes: number;
}

/** v1 writes a page-rounded 2^63 - 1 for "no limit"; anything past 2^60 is none. */
const NO_LIMIT = 2 ** 60;

export async function readContainerMemory(root = "/sys/fs/cgroup"): Promise<MemoryReading | null> {
  return (
    (await reading(`${root}/memory.max`, `${root}/memory.current`, `${root}/memory.stat`, "inactive_file")) ??
    (await reading(
      `${root}/memory/memory.limit_in_bytes`,
      `${root}/memory/memory.usage_in_bytes`,
      `${root}/memory/memory.stat`,
      "total_inactive_file",
    ))
  );
}

async function reading(
  limitFile: string,
  usageFile: string,
  statFile: string,
  inactiveKey: string,
): Promise<MemoryReading | null> {
  const [limit, usage, stat] = await Promise.all(
    [limitFile, usageFile, statFile].map((file) => readFile(file, "utf8").catch(() => null)),
  );
  if (limit === null || limit === undefined || usage === null || usage === undefined) return null;
  const limitBytes = Number(limit.trim());
  const usageBytes = Number(usage.trim());
  if (!Number.isFinite(limitBytes) || limitBytes <= 0 || limitBytes >= NO_LIMIT) return null;
  if (!Number.isFinite(usageBytes)) return null;
  const inactive = Number(new RegExp(`^${inactiveKey} (\\d+)$`, "m").exec(stat ?? "")?.[1] ?? 0);
  return { limitBytes, workingSetBytes: Math.max(0, usageBytes - inactive) };
}
