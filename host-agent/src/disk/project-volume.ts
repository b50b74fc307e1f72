/**
 * One project's volume on this host (workspaces and homes): in filesystem mode a loop-mounted
 * image of the project's size, else a plain directory; either way measured, so the host-agent
 * can stop a project at its bound and say so. A volume that already held data before this host
 * used filesystem mode stays a plain, measured directory.
 */
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import type { Logger } from "../../../lib/log.js";
import type { DiskMode, DiskSettings } from "./disk-settings.js";
import { createImage, filesystemUsage, growImage, isMountPoint, mountImage, unmount } from "./loop-volume.js";
import { measuredBytes } from "./measured-usage.js";

const MIB = 1024 * 1024;

export interface VolumePaths {
  /** The image file (filesystem mode). */
  image: string;
  /** The mount point, or the plain directory. */
  volume: string;
  /** Where workspaces lived before volumes: moved in on first use. */
  legacyWorkspaces: string;
  workspaces: string;
}

export interface VolumeUsage {
  usedBytes: number;
  limitBytes: number;
  /** The bound is reached: used ≥ limit, or the filesystem has (almost) no room left. */
  exceeded: boolean;
}

export class ProjectVolume {
  readonly #paths: VolumePaths;
  readonly #settings: DiskSettings;
  readonly #log: Logger;
  #mode: DiskMode | null = null;
  #limitMb: number;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(paths: VolumePaths, settings: DiskSettings, logger: Logger) {
    this.#paths = paths;
    this.#settings = settings;
    this.#log = logger;
    this.#limitMb = settings.defaultMb;
  }

  /** The bound in force (MiB). */
  get limitMb(): number {
    return this.#limitMb;
  }

  /** How this project's volume is bounded (known once `ensure` ran). */
  get mode(): DiskMode {
    return this.#mode ?? this.#settings.mode;
  }

  /**
   * Makes the volume ready (made and mounted in filesystem mode) with the project's bound
   * (`limitMb`, else the host's default). `idle`: nothing uses the volume now (no container), so
   * an image smaller than the bound may be unmounted and grown. Idempotent.
   */
  ensure(limitMb?: number, options: { idle?: boolean } = {}): Promise<void> {
    return this.#serial(async () => {
      if (limitMb !== undefined) this.#limitMb = limitMb;
      this.#mode ??= await this.#decideMode();
      if (this.#mode === "filesystem") {
        if ((await stat(this.#paths.image).catch(() => null)) === null) {
          await createImage(this.#paths.image, this.#limitMb);
          this.#log.info({ disk_mb: this.#limitMb }, "project volume made (loop-mounted ext4)");
        } else if (options.idle && (await stat(this.#paths.image)).size < this.#limitMb * MIB) {
          await unmount(this.#paths.volume);
          if (await growImage(this.#paths.image, this.#limitMb))
            this.#log.info({ disk_mb: this.#limitMb }, "project volume grown");
        }
        await mountImage(this.#paths.image, this.#paths.volume);
      } else {
        await mkdir(this.#paths.volume, { recursive: true, mode: 0o755 });
      }
      await this.#adoptLegacyWorkspaces();
    });
  }

  /** How much the volume holds against its bound. */
  async usage(): Promise<VolumeUsage> {
    const limitBytes = this.#limitMb * MIB;
    if (this.mode === "filesystem" && (await isMountPoint(this.#paths.volume))) {
      const fs = await filesystemUsage(this.#paths.volume);
      // ext4 keeps some of the image for itself: "full" is also "no room left".
      const nearlyFull = fs.available < Math.max(MIB, fs.size / 100);
      return { usedBytes: fs.used, limitBytes, exceeded: fs.used >= limitBytes || nearlyFull };
    }
    const usedBytes = await measuredBytes(this.#paths.volume);
    return { usedBytes, limitBytes, exceeded: usedBytes >= limitBytes };
  }

  /** Unmounts the volume and removes its image (the project leaves this host). */
  release(): Promise<void> {
    return this.#serial(async () => {
      await unmount(this.#paths.volume);
      await rm(this.#paths.image, { force: true });
      this.#mode = null;
    });
  }

  /** Filesystem mode, unless the volume is a plain directory that already holds data. */
  async #decideMode(): Promise<DiskMode> {
    if (this.#settings.mode === "measured") return "measured";
    if ((await stat(this.#paths.image).catch(() => null)) !== null) return "filesystem";
    const held = await readdir(this.#paths.volume).catch(() => [] as string[]);
    const legacy = (await stat(this.#paths.legacyWorkspaces).catch(() => null)) !== null;
    if (held.length > 0 || legacy) {
      this.#log.warn("this project's data predates volumes of their own: its disk use is measured");
      return "measured";
    }
    return "filesystem";
  }

  /** Workspaces of a project made before volumes move into the (plain) volume. */
  async #adoptLegacyWorkspaces(): Promise<void> {
    if ((await stat(this.#paths.legacyWorkspaces).catch(() => null)) === null) return;
    if ((await stat(this.#paths.workspaces).catch(() => null)) !== null) return;
    await rename(this.#paths.legacyWorkspaces, this.#paths.workspaces);
    this.#log.info("workspaces moved into the project's volume");
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(fn);
    this.#chain = next.catch(() => {});
    return next;
  }
}
