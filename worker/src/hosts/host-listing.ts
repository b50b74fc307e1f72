import type { HostDisk, RuntimeKind } from "../../../protocol/tunnel.js";
import type { ConnectedHost } from "./host-channels.js";
import type { HostStore } from "./host-store.js";

/** A host as `host list` shows it. */
export interface HostListing {
  host_id: string;
  connected: boolean;
  runtime: RuntimeKind | null;
  sessions: number;
  max_sessions: number | null;
  draining: boolean;
  missing_since: string | null;
  /** How the host bounds projects' disk use and a project's bound when it names none (connected hosts). */
  disk: HostDisk | null;
  /** The host-agent's version (connected hosts). */
  version: string | null;
  /** When the host was last heard from (a connected host's last ping; a missing host's last moment). */
  last_seen: string | null;
}

/**
 * Connected and known hosts, by id: runtime, load, capacity, drain state; a missing host (one
 * holding placements while it is away) with the time it was first missed.
 */
export function listHosts(connected: ConnectedHost[], store: HostStore): HostListing[] {
  const listings = new Map<string, HostListing>();
  for (const host of connected) {
    const { hostId, runtime, maxSessions, disk, version } = host.attachment;
    const drained = store.drainedSince(hostId);
    listings.set(hostId, {
      host_id: hostId,
      connected: true,
      runtime,
      sessions: store.load(hostId),
      max_sessions: maxSessions,
      draining: drained !== null,
      missing_since: null,
      disk: disk ?? null,
      version: version ?? null,
      last_seen: host.lastSeen === null ? null : new Date(host.lastSeen).toISOString(),
    });
  }
  for (const { hostId, missingSince } of store.missingHosts()) {
    if (listings.has(hostId)) continue;
    listings.set(hostId, {
      host_id: hostId,
      connected: false,
      runtime: null,
      sessions: store.load(hostId),
      max_sessions: null,
      draining: store.drainedSince(hostId) !== null,
      missing_since: new Date(missingSince).toISOString(),
      disk: null,
      version: null,
      last_seen: new Date(missingSince).toISOString(),
    });
  }
  return [...listings.values()].sort((a, b) => a.host_id.localeCompare(b.host_id));
}
