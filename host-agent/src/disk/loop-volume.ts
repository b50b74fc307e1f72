/**
 * A project's volume as a filesystem of its own: a sparse image file formatted ext4 and
 * loop-mounted where the project's workspaces and homes live, so the kernel itself stops the
 * project at its size (ENOSPC) and no project can fill the host's disk. Needs root and the loop
 * driver; `probeLoopVolumes` says whether this host has both.
 */
import { mkdir, mkdtemp, open, rm, stat, statfs } from "node:fs/promises";
import { dirname, join } from "node:path";
import { runTool, ToolError } from "./run-tool.js";

const MIB = 1024 * 1024;

/** Whether `dir` is a mount point (its device differs from its parent's). */
export async function isMountPoint(dir: string): Promise<boolean> {
  const [self, parent] = await Promise.all([
    stat(dir).catch(() => null),
    stat(dirname(dir)).catch(() => null),
  ]);
  return self !== null && parent !== null && self.dev !== parent.dev;
}

/** Makes a sparse image of `mb` MiB formatted ext4 (no blocks reserved for root: the bound is the project's). */
export async function createImage(image: string, mb: number): Promise<void> {
  await mkdir(dirname(image), { recursive: true });
  const file = await open(image, "wx", 0o600);
  try {
    await file.truncate(mb * MIB);
  } finally {
    await file.close();
  }
  try {
    await runTool(
      "mkfs.ext4",
      ["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", image],
      120_000,
    );
  } catch (error) {
    await rm(image, { force: true });
    throw error;
  }
}

/** Mounts the image at `dir` (made if missing), no setuid binaries and no devices honoured. */
export async function mountImage(image: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  if (await isMountPoint(dir)) return;
  await runTool("mount", ["-o", "loop,nosuid,nodev,noinit_itable", "--", image, dir]);
}

/** Unmounts `dir` if it is a mount point (lazily: a process still in it lets go later). */
export async function unmount(dir: string): Promise<void> {
  if (!(await isMountPoint(dir))) return;
  await runTool("umount", ["--lazy", "--", dir]);
}

/**
 * Grows an image to `mb` MiB while nothing has it mounted (ext4 grows offline: a check, then the
 * resize; online growth is not allowed on every kernel). Never shrinks: a smaller bound is kept by
 * measuring instead, until the volume is made again. Resolves with whether it grew.
 */
export async function growImage(image: string, mb: number): Promise<boolean> {
  const size = (await stat(image)).size;
  if (mb * MIB <= size) return false;
  const file = await open(image, "r+");
  try {
    await file.truncate(mb * MIB);
  } finally {
    await file.close();
  }
  // e2fsck exits 1 when it fixed something: that is fine here, resize2fs wants it checked.
  await runTool("e2fsck", ["-f", "-p", image], 300_000).catch((error: unknown) => {
    if (!(error instanceof ToolError) || error.exitCode !== 1) throw error;
  });
  await runTool("resize2fs", [image], 300_000);
  return true;
}

/** Bytes used and still available on the filesystem holding `dir`. */
export async function filesystemUsage(
  dir: string,
): Promise<{ used: number; available: number; size: number }> {
  const fs = await statfs(dir);
  return {
    used: (fs.blocks - fs.bfree) * fs.bsize,
    available: fs.bavail * fs.bsize,
    size: fs.blocks * fs.bsize,
  };
}

/**
 * Whether loop volumes work here: makes, mounts and removes a small one in `scratchDir`. Any
 * failure (not root, no loop devices, no mkfs.ext4, a container without the right) says no.
 */
export async function probeLoopVolumes(
  scratchDir: string,
): Promise<{ ok: true } | { ok: false; why: string }> {
  if (process.getuid?.() !== 0) return { ok: false, why: "the host-agent is not root" };
  await mkdir(scratchDir, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(scratchDir, "probe-"));
  const image = join(dir, "probe.img");
  const mountAt = join(dir, "mnt");
  try {
    await createImage(image, 8);
    await mountImage(image, mountAt);
    const mounted = await isMountPoint(mountAt);
    await unmount(mountAt);
    return mounted ? { ok: true } : { ok: false, why: "the probe image did not mount" };
  } catch (error) {
    return { ok: false, why: error instanceof Error ? error.message : String(error) };
  } finally {
    await unmount(mountAt).catch(() => {});
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}
