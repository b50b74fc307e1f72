/**
 * Decides at start how this host bounds projects' disk use, and says so: `filesystem` when asked
 * or (auto) when a probe volume can be made and mounted here, else `measured`. The process
 * runtime has no containers to bound; its projects are measured like any directory.
 */
import { join } from "node:path";
import type { Logger } from "../../../lib/log.js";
import type { HostAgentConfig } from "../config.js";
import type { DiskSettings } from "./disk-settings.js";
import { probeLoopVolumes } from "./loop-volume.js";

export async function resolveDiskSettings(
  config: HostAgentConfig,
  runtime: "docker" | "process",
  logger: Logger,
): Promise<DiskSettings> {
  const base = {
    defaultMb: config.diskMb,
    checkMs: config.diskCheckMs,
    minFreeMb: config.minFreeDiskMb,
    tmpMb: config.tmpMb,
  };
  let mode: DiskSettings["mode"] = "measured";
  let why = "asked for (--disk-mode measured)";
  if (runtime === "process") {
    why = "the process runtime runs no containers";
  } else if (config.diskMode !== "measured") {
    const probe = await probeLoopVolumes(join(config.dataDir, ".disk-probe"));
    if (probe.ok) {
      mode = "filesystem";
      why = "each project's volume is a loop-mounted filesystem of its size";
    } else if (config.diskMode === "filesystem") {
      throw new Error(`--disk-mode filesystem does not work on this host: ${probe.why}`);
    } else {
      why = `loop-mounted volumes do not work here (${probe.why}); projects' disk use is measured every ${config.diskCheckMs} ms`;
    }
  }
  logger.info(
    { disk_mode: mode, default_disk_mb: base.defaultMb, min_free_disk_mb: base.minFreeMb },
    `disk bound: ${mode} — ${why}`,
  );
  return { mode, ...base };
}
