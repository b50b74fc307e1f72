/**
 * The Node the host-agent runs on: older than it needs is a failure; a release line past its end
 * of life works, but gets no security fixes any more, and doctor says so (a warning: the host
 * still serves). The dates are the Node.js release schedule's (https://nodejs.org/en/about/previous-releases).
 */
import type { DoctorFinding } from "./finding.js";

/** The oldest Node the host-agent runs on (package.json `engines` says the same). */
export const HOST_NODE_MINIMUM = { major: 20, minor: 11 } as const;

/** When each release line stopped (or stops) getting fixes, as `YYYY-MM-DD`. */
export const NODE_END_OF_LIFE: Readonly<Record<number, string>> = {
  18: "2025-04-30",
  19: "2023-06-01",
  20: "2026-04-30",
  21: "2024-06-01",
  22: "2027-04-30",
  23: "2025-06-01",
  24: "2028-04-30",
  25: "2026-06-01",
  26: "2029-04-30",
};

const SUPPORTED = "Node 22 or 24 (LTS)";

/** What doctor says of Node `version` (`process.versions.node`) on `today`. */
export function checkNodeVersion(version: string, today: Date): DoctorFinding {
  const [major = Number.NaN, minor = Number.NaN] = version.split(".").map(Number);
  if (!Number.isInteger(major) || !Number.isInteger(minor))
    return { check: "node", ok: false, detail: `cannot read the Node version "${version}"` };
  const { major: needMajor, minor: needMinor } = HOST_NODE_MINIMUM;
  if (major < needMajor || (major === needMajor && minor < needMinor))
    return {
      check: "node",
      ok: false,
      detail: `Node ${version} is older than the host-agent needs (${needMajor}.${needMinor} or later)`,
      fix: `install ${SUPPORTED}`,
    };
  const end = NODE_END_OF_LIFE[major];
  if (end !== undefined && today.toISOString().slice(0, 10) > end)
    return {
      check: "node",
      ok: true,
      warning: true,
      detail: `Node ${version} runs the host-agent, but Node ${major} reached its end of life on ${end}: it gets no security fixes`,
      fix: `install ${SUPPORTED}; the host-agent runs on it unchanged`,
    };
  return { check: "node", ok: true, detail: `Node ${version}` };
}
