/** How an agent process ended, in words for its session's events. */
import type { AgentExit } from "./agent-process.js";
import { readContainerMemory } from "./memory-cgroup.js";
import { oomKills } from "./oom-kills.js";

/**
 * "exited with code 1", "was killed by SIGTERM", or the kernel's OOM kill said as such (its OOM
 * kill count grew past `oomBaseline`, read before the process started).
 */
export async function describeExit(exit: AgentExit, oomBaseline: number | null): Promise<string> {
  if (exit.signal === "SIGKILL") {
    const kills = await oomKills();
    if (kills !== null && oomBaseline !== null && kills > oomBaseline) {
      const memory = await readContainerMemory();
      const limit = memory ? ` of ${Math.round(memory.limitBytes / 1024 / 1024)} MiB` : "";
      return `was killed by the kernel for want of memory (out of memory: the container's limit${limit} was reached; raise the project's limits.memory_mb)`;
    }
  }
  return exit.signal !== null
    ? `was killed by ${exit.signal}`
    : `exited with code ${exit.exitCode ?? "unknown"}`;
}

/** `n` with its English ordinal suffix: 1st, 2nd, 3rd, 4th, 11th, 22nd. */
export function ordinal(n: number): string {
  const suffix =
    n % 10 === 1 && n % 100 !== 11
      ? "st"
      : n % 10 === 2 && n % 100 !== 12
        ? "nd"
        : n % 10 === 3 && n % 100 !== 13
          ? "rd"
          : "th";
  return `${n}${suffix}`;
}
