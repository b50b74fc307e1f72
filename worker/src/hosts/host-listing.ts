import { hostVersionWarning } from "../../../protocol/host-version.js";
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
  /** When it was lost: missing past the grace period, its sessions ended; listed until revoked. */
  lost_since: string | null;
  /** How the host bounds projects' disk use and a project's bound when it names none (connected hosts). */
  disk: HostDisk | null;
  /** The host-agent's version (connected hosts). */
  version: string | null;
  /** Set when the host-agent is older than this Worker supports: what to do about it. */
  warning?: string;
  /** When the host was last heard from (a connected host's last ping; a missing host's last moment). */
  last_seen: string | null;
}

function warningOf(version: string | null): { warning?: string } {
  const warning = hostVersionWarning(version);
  return warning === null ? {} : { warning };
}

/**
 * Connected and known hosts, by id: runtime, load, capacity, drain state; a missing host with the
 * time it was first missed, and a lost one (missing past the grace period) with when it was lost,
 * until it is revoked.
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
      lost_since: null,
      disk: disk ?? null,
      version: version ?? null,
      last_seen: host.lastSeen === null ? null : new Date(host.lastSeen).toISOString(),
      ...warningOf(version ?? null),
    });
  }
  const away = [
    ...store.missingHosts().map((h) => ({ ...h, lostAt: null as number | null })),
    ...store.lostHosts(),
  ];
  for (const { hostId, missingSince, lostAt } of away) {
    if (listings.has(hostId) || store.hostRevoked(hostId)) continue;
    listings.set(hostId, {
      host_id: hostId,
      connected: false,
      runtime: null,
      sessions: store.load(hostId),
      max_sessions: null,
      draining: store.drainedSince(hostId) !== null,
      missing_since: new Date(missingSince).toISOString(),
      lost_since: lostAt === null ? null : new Date(lostAt).toISOString(),
      disk: null,
      version: null,
      last_seen: new Date(missingSince).toISOString(),
    });
  }
  return [...listings.values()].sort((a, b) => a.host_id.localeCompare(b.host_id));
}
