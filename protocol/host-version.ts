/**
 * Which host-agents this Worker still supports. A host-agent reports its version in `host_hello`
 * (`agent_version`); one older than MIN_HOST_AGENT_VERSION still connects (refusing it would end
 * its running sessions), but `host list` marks it outdated and says to upgrade it. Raise the
 * minimum when the Worker comes to need something older host-agents do not do.
 */
import lt from "semver/functions/lt.js";
import valid from "semver/functions/valid.js";

export const MIN_HOST_AGENT_VERSION = "0.1.0";

/** Why a host-agent of `version` should be upgraded, or null when this Worker supports it. */
export function hostVersionWarning(version: string | null): string | null {
  if (version === null) return null;
  if (valid(version) === null)
    return `host-agent version ${JSON.stringify(version.slice(0, 64))} is not a version this Worker knows; upgrade it to ${MIN_HOST_AGENT_VERSION} or later`;
  if (lt(version, MIN_HOST_AGENT_VERSION))
    return `host-agent ${version} is older than ${MIN_HOST_AGENT_VERSION}, the oldest this Worker supports: upgrade it (replace its host-agent.mjs and restart it; running sessions keep running)`;
  return null;
}
