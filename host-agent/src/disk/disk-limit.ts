/** A project that reached its disk bound: the error its refused work gets, and the notice its sessions hear. */
import type { HostNotice } from "../../../protocol/tunnel.js";
import { HostError } from "../projects/errors.js";
import { mib } from "./disk-watch.js";
import type { VolumeUsage } from "./project-volume.js";

export function diskLimitError(usage: VolumeUsage): HostError {
  return new HostError(
    "disk_limit",
    `the project uses ${mib(usage.usedBytes)} MiB of its ${mib(usage.limitBytes)} MiB disk bound; ` +
      "its agents are stopped and new sessions refused until space is freed (its workspaces stay)",
  );
}

export function diskLimitNotice(usage: VolumeUsage): HostNotice {
  return {
    type: "disk_limit",
    used_mb: mib(usage.usedBytes),
    limit_mb: mib(usage.limitBytes),
    message: diskLimitError(usage).message,
  };
}
