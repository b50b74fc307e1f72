import type { HostDisk, RuntimeKind } from "../../../protocol/tunnel.js";
import { fail, ok, type Result } from "../errors.js";
import type { ConnectedHost } from "./host-channels.js";
import type { HostStore } from "./host-store.js";

/** A project moved to another host for a session: from where, and why (its workspaces stayed behind). */
export interface Moved {
  from: string;
  reason: "draining" | "relocated";
}

/** Where a session was placed, and whether its project moved there. */
export interface Placed {
  hostId: string;
  runtime: RuntimeKind;
  moved?: Moved;
}

/** What placement needs from the registry. */
export interface HostPlacementDeps {
  store: HostStore;
  /** Hosts connected now (see connectedHosts). */
  connected(): ConnectedHost[];
  /** How long a spawn waits for the host it needs to (re)connect. */
  waitMs(): number;
  /** A session was placed: the alarm watches placements from now on. */
  placed(): void;
}

/**
 * Chooses and records hosts: a project's host is sticky once chosen (its container and workspaces
 * live there); a project not placed yet goes to the open host with the most free room, then the
 * fewest projects. Spawns that need a host that is away wait a little for it (`hostReady` wakes
 * them); a full or draining host is refused at once.
 */
export class HostPlacement {
  readonly #d: HostPlacementDeps;
  /** Spawns waiting for a host to (re)connect. */
  readonly #waiters = new Set<() => void>();

  constructor(deps: HostPlacementDeps) {
    this.#d = deps;
  }

  /**
   * Places a session on its project's host (placing the project first when it has none), waiting
   * until the wait deadline for the host it needs. The placement is recorded before the host is
   * asked to start anything, so the session recognises its tunnel.
   */
  async place(input: {
    sessionId: string;
    projectId: string;
    /** Move the project to another host if its own is not connected (its workspaces stay behind). */
    relocate?: boolean;
  }): Promise<Result<Placed>> {
    const { store } = this.#d;
    const deadline = Date.now() + this.#d.waitMs();
    for (;;) {
      const chosen = this.#hostForSession(input.projectId, input.relocate === true);
      if (chosen.ok) {
        const { host, moved } = chosen.value;
        store.placeProject(input.projectId, host.attachment.hostId);
        store.place(input.sessionId, host.attachment.hostId);
        this.#d.placed();
        return ok({
          hostId: host.attachment.hostId,
          runtime: host.attachment.runtime,
          ...(moved === null ? {} : { moved }),
        });
      }
      if (chosen.error.code !== "no_host" || Date.now() >= deadline)
        return fail(chosen.error.code, chosen.error.message);
      await this.#hostConnected(deadline - Date.now());
    }
  }

  /**
   * The connected host of a project, for a request about its container or workspaces. A project
   * with no host yet is placed now when `placeWith` says so; otherwise it has nothing on any host.
   */
  hostOfProject(projectId: string, placeWith: boolean | undefined): Result<ConnectedHost> {
    let hostId = this.#d.store.projectHost(projectId);
    if (hostId === null) {
      if (!placeWith) {
        return fail(
          "not_running",
          `project ${projectId} has no container yet (container start, or spawn a session)`,
        );
      }
      const chosen = this.hostFor(projectId);
      if (!chosen.ok) return chosen;
      hostId = chosen.value.attachment.hostId;
      this.#d.store.placeProject(projectId, hostId);
    }
    const host = this.connectedHost(hostId);
    if (!host) return fail("no_host", `project ${projectId} lives on host ${hostId}, which is not connected`);
    return ok(host);
  }

  /** The host a project is placed on and how it bounds disk (null when not connected or unsaid). */
  projectHost(projectId: string): { hostId: string; disk: HostDisk | null } | null {
    const hostId = this.#d.store.projectHost(projectId);
    if (hostId === null) return null;
    const disk = this.connectedHost(hostId)?.attachment.disk ?? null;
    return { hostId, disk };
  }

  /** The connected host with this id, if it is connected. */
  connectedHost(hostId: string): ConnectedHost | undefined {
    return this.#d.connected().find((h) => h.attachment.hostId === hostId);
  }

  /** A host is ready: spawns waiting for one look again. */
  hostReady(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  /**
   * The host a project's next session goes to: its own, unless that one drains (then another,
   * and the project moves with it) or is away and the caller asked to relocate. A project whose
   * host is lost or revoked moves only when asked: its workspaces are there.
   */
  #hostForSession(
    projectId: string,
    relocate: boolean,
  ): Result<{ host: ConnectedHost; moved: Moved | null }> {
    const { store } = this.#d;
    const placed = store.projectHost(projectId);
    const chosen = this.hostFor(projectId);
    if (chosen.ok || placed === null) return chosen.ok ? ok({ host: chosen.value, moved: null }) : chosen;
    const connected = this.connectedHost(placed);
    const draining = connected !== undefined && store.drainedSince(placed) !== null;
    if (!draining && !relocate) {
      const gone = store.lostAt(placed) !== null || store.hostRevoked(placed);
      if (!gone)
        return fail(
          chosen.error.code,
          `${chosen.error.message} (relocate: true starts it on another host now; its workspaces stay on ${placed})`,
        );
      return fail(
        "host_lost",
        `project ${projectId} lives on host ${placed}, which is ${store.hostRevoked(placed) ? "revoked" : "lost"}; ` +
          "its workspaces are there. Spawn with relocate: true to start it on another host " +
          "(its workspace starts afresh there, or from its git remote)",
      );
    }
    // Moving: any other open host with room.
    const others = this.#d
      .connected()
      .filter((h) => h.attachment.hostId !== placed && store.drainedSince(h.attachment.hostId) === null);
    const best = this.#mostRoom(others);
    if (best === null)
      return fail(
        "host_full",
        `project ${projectId} lives on host ${placed}, which is ${draining ? "draining" : "not connected"}, and no other host has room`,
      );
    return ok({ host: best, moved: { from: placed, reason: draining ? "draining" : "relocated" } });
  }

  /** The host a project's next session goes to, or why there is none. */
  hostFor(projectId: string): Result<ConnectedHost> {
    const { store } = this.#d;
    const hosts = this.#d.connected();
    const placed = store.projectHost(projectId);
    if (placed !== null) {
      const host = hosts.find((h) => h.attachment.hostId === placed);
      if (!host)
        return fail("no_host", `project ${projectId} lives on host ${placed}, which is not connected`);
      if (store.drainedSince(placed) !== null) {
        return fail(
          "host_full",
          `project ${projectId} lives on host ${placed}, which is draining: it takes no new sessions`,
        );
      }
      const load = store.load(placed);
      if (load >= host.attachment.maxSessions) {
        return fail(
          "host_full",
          `host ${placed} of project ${projectId} is full (runs ${load} of ${host.attachment.maxSessions})`,
        );
      }
      return ok(host);
    }
    const open = hosts.filter((h) => store.drainedSince(h.attachment.hostId) === null);
    const best = this.#mostRoom(open);
    if (best) return ok(best);
    if (hosts.length === 0) {
      return fail(
        "no_host",
        'no host-agent is connected to this Worker; start one (see the README, "Running a host-agent")',
      );
    }
    if (open.length === 0) {
      return fail(
        "host_full",
        `every connected host is draining (${hosts.map((h) => h.attachment.hostId).join(", ")}); undrain one or add a host`,
      );
    }
    const full = open.map(
      (h) => `${h.attachment.hostId} runs ${store.load(h.attachment.hostId)} of ${h.attachment.maxSessions}`,
    );
    return fail(
      "host_full",
      `every connected host is full (${full.join("; ")}); end a session or add a host`,
    );
  }

  /** The host with the most free room (sessions), then the fewest projects; null if all are full. */
  #mostRoom(hosts: ConnectedHost[]): ConnectedHost | null {
    let best: { host: ConnectedHost; free: number; projects: number } | null = null;
    for (const host of hosts) {
      const free = host.attachment.maxSessions - this.#d.store.load(host.attachment.hostId);
      if (free <= 0) continue;
      const projects = this.#d.store.projectsOn(host.attachment.hostId).length;
      if (!best || free > best.free || (free === best.free && projects < best.projects))
        best = { host, free, projects };
    }
    return best?.host ?? null;
  }

  /** Resolves when a host is ready (see hostReady) or after `timeoutMs`, whichever is first. */
  #hostConnected(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, timeoutMs));
      this.#waiters.add(wake);
    });
  }
}
