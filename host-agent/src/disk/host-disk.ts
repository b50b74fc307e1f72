/**
 * The host's own disk: new work (a project's volume, a container, a session) is refused while
 * the data directory's filesystem has less free space than the configured minimum, so projects
 * can never take the room the host-agent's own state needs.
 */
import { statfs } from "node:fs/promises";
import { HostError } from "../projects/errors.js";

const MIB = 1024 * 1024;

/** Throws `host_full` when `dataDir`'s filesystem has less than `minFreeMb` MiB free. */
export async function checkHostDisk(dataDir: string, minFreeMb: number): Promise<void> {
  const fs = await statfs(dataDir);
  const freeMb = Math.floor((fs.bavail * fs.bsize) / MIB);
  if (freeMb < minFreeMb) {
    throw new HostError(
      "host_full",
      `this host's disk is nearly full (${freeMb} MiB free, it keeps at least ${minFreeMb} MiB): ` +
        "it takes no new work until space is freed",
    );
  }
}
