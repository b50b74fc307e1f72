/**
 * Project volumes a host-agent loop-mounted under a stack's state directory (filesystem disk
 * mode) outlive the host-agent by design; a temporary stack that removes its directory unmounts
 * them first, or the removal would stop at each mount point and leave the mounts behind.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

/** Mount points at or below `dir`, deepest first (from /proc/self/mounts; none off Linux). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const table = await readFile("/proc/self/mounts", "utf8").catch(() => "");
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  return table
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .map((field) =>
      field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))),
    )
    .filter((point) => point === dir || point.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/** Unmounts (lazily) every mount at or below `dir`; resolves with how many it unmounted. */
export async function unmountUnder(dir: string): Promise<number> {
  let count = 0;
  for (const point of await mountsUnder(dir)) {
    try {
      await promisify(execFile)("umount", ["--lazy", "--", point]);
      count += 1;
    } catch {
      // not ours to unmount, or gone already
    }
  }
  return count;
}
