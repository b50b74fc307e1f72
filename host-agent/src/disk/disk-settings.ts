/**
 * How this host bounds projects' disk use:
 * - `filesystem`: each project's volume is a loop-mounted ext4 image of its size (the kernel
 *   refuses writes past it); needs root and loop devices;
 * - `measured`: volumes are plain directories, measured every `checkMs` (`du`); past the bound
 *   the project's agents are stopped.
 * Either way the containers' root filesystems are read-only (their writes go to the volume, or
 * to a small /tmp in memory), and the host refuses new work while its own disk is nearly full.
 */
export type DiskMode = "filesystem" | "measured";

export interface DiskSettings {
  mode: DiskMode;
  /** A project's bound when it names none (MiB). */
  defaultMb: number;
  /** How often running projects are measured (ms, at most 10 s). */
  checkMs: number;
  /** New work is refused while the host's data disk has less free than this (MiB). */
  minFreeMb: number;
  /** The size of each container's in-memory /tmp (MiB; counted against its memory limit). */
  tmpMb: number;
}

export const DEFAULT_DISK_SETTINGS: Omit<DiskSettings, "mode"> = {
  defaultMb: 10_240,
  checkMs: 5_000,
  minFreeMb: 1_024,
  tmpMb: 64,
};
