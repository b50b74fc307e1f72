/**
 * A project's disk bound on the host, with the real tools: a loop-mounted ext4 volume that the
 * kernel stops at its size (as root, where loop devices work), a measured plain directory
 * (`du`), the watch that reports a crossing once, and the host's own free-space floor.
 */
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DiskSettings } from "../../host-agent/src/disk/disk-settings.js";
import { DiskWatch } from "../../host-agent/src/disk/disk-watch.js";
import { checkHostDisk } from "../../host-agent/src/disk/host-disk.js";
import { isMountPoint, probeLoopVolumes } from "../../host-agent/src/disk/loop-volume.js";
import { ProjectVolume, type VolumeUsage } from "../../host-agent/src/disk/project-volume.js";
import { HostError } from "../../host-agent/src/projects/errors.js";
import { createLogger } from "../../lib/log.js";

const logger = createLogger({ name: "disk-test", level: "silent" });
const MIB = 1024 * 1024;
const settings = (mode: DiskSettings["mode"], defaultMb: number): DiskSettings => ({
  mode,
  defaultMb,
  checkMs: 100,
  minFreeMb: 0,
  tmpMb: 16,
});

let dir: string;
let volume: ProjectVolume | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "disk-bound-"));
});

afterEach(async () => {
  await volume?.release();
  volume = undefined;
  await rm(dir, { recursive: true, force: true });
});

function volumeAt(mode: DiskSettings["mode"], mb: number): ProjectVolume {
  volume = new ProjectVolume(
    {
      image: join(dir, "disk.img"),
      volume: join(dir, "volume"),
      legacyWorkspaces: join(dir, "workspaces"),
      workspaces: join(dir, "volume", "workspaces"),
    },
    settings(mode, mb),
    logger,
  );
  return volume;
}

/** Writes up to `mb` MiB into `path`; resolves with how many MiB were written and the error that stopped it. */
async function fill(path: string, mb: number): Promise<{ written: number; error: string | null }> {
  const stream = createWriteStream(path);
  const chunk = Buffer.alloc(MIB, 7);
  let written = 0;
  const error = await new Promise<string | null>((resolve) => {
    stream.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    const next = () => {
      if (written >= mb) return stream.end(() => resolve(null));
      written += 1;
      stream.write(chunk, (err) => (err ? undefined : next()));
    };
    next();
  });
  stream.destroy();
  return { written, error };
}

describe("a measured volume", () => {
  it("reports its bound once when crossed, and again only after it went back below", async () => {
    const v = volumeAt("measured", 2);
    await v.ensure();
    expect(v.mode).toBe("measured");
    const crossings: VolumeUsage[] = [];
    const watch = new DiskWatch({ volume: v, intervalMs: 50, logger, onExceeded: (u) => crossings.push(u) });
    expect((await watch.check())?.exceeded).toBe(false);
    await writeFile(join(dir, "volume", "big"), Buffer.alloc(3 * MIB, 1));
    const over = await watch.check();
    expect(over).toMatchObject({ exceeded: true, limitBytes: 2 * MIB });
    expect(over?.usedBytes).toBeGreaterThanOrEqual(3 * MIB);
    await watch.check();
    expect(crossings).toHaveLength(1);
    await rm(join(dir, "volume", "big"));
    expect((await watch.check())?.exceeded).toBe(false);
    await writeFile(join(dir, "volume", "again"), Buffer.alloc(3 * MIB, 1));
    await watch.check();
    expect(crossings).toHaveLength(2);
  });
});

describe("a filesystem volume", async () => {
  const loops = await probeLoopVolumes(join(tmpdir(), "disk-bound-probe"));
  it.runIf(loops.ok)(
    "is a filesystem of its size: writes stop there, and the watch sees it full",
    async () => {
      const v = volumeAt("filesystem", 64);
      await v.ensure();
      expect(v.mode).toBe("filesystem");
      expect(await isMountPoint(join(dir, "volume"))).toBe(true);
      const { written, error } = await fill(join(dir, "volume", "fill"), 200);
      expect(error).toBe("ENOSPC");
      expect(written).toBeLessThanOrEqual(64);
      expect((await stat(join(dir, "volume", "fill"))).size).toBeLessThanOrEqual(64 * MIB);
      const usage = await v.usage();
      expect(usage.exceeded).toBe(true);
      // A bigger bound grows it while nothing uses it (and not while something may).
      await v.ensure(96);
      expect((await stat(join(dir, "disk.img"))).size).toBe(64 * MIB);
      await v.ensure(96, { idle: true });
      expect((await stat(join(dir, "disk.img"))).size).toBe(96 * MIB);
      expect((await v.usage()).exceeded).toBe(false);
      await v.release();
      expect(await isMountPoint(join(dir, "volume"))).toBe(false);
      await expect(stat(join(dir, "disk.img"))).rejects.toMatchObject({ code: "ENOENT" });
    },
  );
});

describe("the host's own disk", () => {
  it("refuses new work below its free-space floor, saying how much is free", async () => {
    const refused = await checkHostDisk(dir, 1_000_000_000).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(HostError);
    expect(refused).toMatchObject({ reason: "host_full", message: expect.stringMatching(/MiB free/) });
    await expect(checkHostDisk(dir, 0)).resolves.toBeUndefined();
  });
});
