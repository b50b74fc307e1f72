import { DEFAULT_PROJECT_LIMITS, type ProjectLimits } from "../../../protocol/project.js";
import type { ResolvedLimits } from "../runtime/types.js";

/** A project's limits with this host's defaults for what it leaves out. */
export function resolveLimits(limits: ProjectLimits): ResolvedLimits {
  return {
    memoryMb: limits.memory_mb ?? DEFAULT_PROJECT_LIMITS.memory_mb,
    cpus: limits.cpus ?? DEFAULT_PROJECT_LIMITS.cpus,
    pids: limits.pids ?? DEFAULT_PROJECT_LIMITS.pids,
  };
}
