import { hostVersionWarning } from "../../../protocol/host-version.js";
import { clip, RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { ParsedParams, RequestMethod, SentParams, SentResult } from "../../../protocol/rpc/method.js";
import { TunnelMethods } from "../../../protocol/tunnel.js";
import type { AuditEntry } from "../audit/audit-log-do.js";
import type { Result } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import { requireTunnelVersion } from "../rpc/tunnel-version.js";
import { type HostAttachment, hostAttachment } from "./host-attachment.js";
import type { ConnectedHost } from "./host-channels.js";
import type { HostStore } from "./host-store.js";

/** What a host says in `host_hello`: who it is, and what it really runs and has. */
export type HostHelloParams = ParsedParams<typeof TunnelMethods.hostHello>;

/** What reconciliation needs from the registry. */
export interface HostReconcileDeps {
  store: HostStore;
  /** Hosts connected now (see connectedHosts). */
  connected(): ConnectedHost[];
  /** Sends a request to a host; reconciliation does not wait for its answer. */
  request<M extends RequestMethod>(ws: WebSocket, method: M, params: SentParams<M>): Promise<Result<unknown>>;
  /** Ends a session its host lost (the session object records why). */
  hostLost(sessionId: string, reason: string): Promise<unknown>;
  /** Whether a project still exists (its project object says so). */
  projectExists(projectId: string): Promise<boolean>;
  /** A host registered: spawns waiting for one look again. */
  hostReady(): void;
  audit(entry: AuditEntry): Promise<unknown>;
  alarms: Pick<DurableObjectStorage, "getAlarm" | "setAlarm">;
  /** How long a host may be away before its sessions end (also: how long a channel may stay silent). */
  graceMs(): number;
  log: Log;
}

/**
 * Keeps placements true. A host that connects registers (`host_hello`) and is reconciled against
 * what it reports: sessions placed on it that it no longer runs end with a host-lost reason,
 * sessions it runs that are not placed there are stopped, projects deleted while it was away are
 * removed there. A host that goes away is missing from then on; one gone longer than the grace
 * period (the alarm watches) has its sessions ended and its placements released.
 */
export class HostReconcile {
  readonly #d: HostReconcileDeps;

  constructor(deps: HostReconcileDeps) {
    this.#d = deps;
  }

  /** `host_hello`: the connection becomes the host's registered channel, reconciled against its report. */
  async hello(ws: WebSocket, params: HostHelloParams): Promise<SentResult<typeof TunnelMethods.hostHello>> {
    const a = hostAttachment(ws);
    if (a === null) throw new RpcError(RpcErrorCode.Unauthenticated, "not a host connection");
    requireTunnelVersion(ws, params.v);
    if (params.host_id !== a.hostId) {
      throw new RpcError(
        RpcErrorCode.InvalidParams,
        `host_id ${clip(params.host_id)} is not the connection's ${a.hostId}`,
      );
    }
    ws.serializeAttachment({
      ...a,
      runtime: params.runtime,
      maxSessions: params.max_sessions,
      ready: true,
      ...(params.disk ? { disk: params.disk } : {}),
      version: params.agent_version,
      connectedAt: Date.now(),
    } satisfies HostAttachment);
    this.#d.store.hostBack(a.hostId);
    this.#audit(a, "host.register", "ok");
    this.#d.log.info("host ready", {
      host: a.hostId,
      runtime: params.runtime,
      sessions: params.sessions.length,
      version: params.agent_version,
    });
    const outdated = hostVersionWarning(params.agent_version);
    if (outdated !== null) this.#d.log.warn("host-agent outdated", { host: a.hostId, warning: outdated });
    await this.#sessions(ws, a.hostId, new Set(params.sessions));
    void this.#projects(
      ws,
      a.hostId,
      params.projects.map((p) => p.project_id),
    );
    this.#d.hostReady();
    return { host_id: a.hostId };
  }

  /** A host's channel closed: unless another of its connections is open, it is missing from now on. */
  channelClosed(hostId: string): void {
    if (this.#d.connected().some((h) => h.attachment.hostId === hostId)) return;
    this.missing(hostId);
  }

  /** A host is missing from now on: its sessions end after the grace period unless it is back. */
  missing(hostId: string): void {
    this.#d.store.hostMissing(hostId, Date.now());
    this.watch();
  }

  /** The alarm: hosts gone longer than the grace period lose their sessions and are lost. */
  async alarm(): Promise<void> {
    const { store } = this.#d;
    const now = Date.now();
    const graceMs = this.#d.graceMs();
    const connected = new Set(this.#d.connected().map((h) => h.attachment.hostId));
    // Hosts holding placements that are not connected (a close we never heard of included).
    for (const hostId of store.placedHosts()) {
      if (connected.has(hostId)) store.hostBack(hostId);
      else store.hostMissing(hostId, now);
    }
    for (const { hostId, missingSince } of store.missingHosts()) {
      if (connected.has(hostId)) {
        store.hostBack(hostId);
        continue;
      }
      if (now - missingSince < graceMs) continue;
      const reason = `host ${hostId} lost: its host-agent was not connected for ${Math.round((now - missingSince) / 1000)} s`;
      await this.#loseSessions(hostId, store.sessionsOn(hostId), reason);
      // Its projects stay placed on it (their workspaces are there): a spawn in one says so and
      // moves only when asked (relocate). It stays listed as lost, unless it was revoked.
      if (store.hostRevoked(hostId)) store.forgetHost(hostId);
      else {
        store.markLost(hostId, missingSince, now);
        this.#d.log.warn("host lost", { host: hostId, projects: store.projectsOn(hostId).length });
      }
    }
    this.watch(true);
  }

  /**
   * Keeps an alarm set while there is anything to watch: missing hosts, or placements at all.
   * `force` sets it even when an earlier one is set (the alarm itself, which has just fired).
   */
  watch(force = false): void {
    const graceMs = this.#d.graceMs();
    const missing = this.#d.store.missingHosts().map((h) => h.missingSince + graceMs);
    const watch = this.#d.store.hasPlacements() ? Date.now() + graceMs : null;
    const due = [...missing, ...(watch === null ? [] : [watch])];
    if (due.length === 0) return;
    const at = Math.max(Date.now() + 1_000, Math.min(...due));
    const { alarms } = this.#d;
    void alarms.getAlarm().then((current) => {
      if (!force && current !== null && current <= at) return;
      return alarms.setAlarm(at);
    });
  }

  /**
   * Makes placements match what the host really runs: sessions placed on it that it no longer
   * runs end (host lost); sessions it runs that are not placed on it (they ended while it was
   * away) are stopped. Placements still starting are left to their start request.
   */
  async #sessions(ws: WebSocket, hostId: string, running: Set<string>): Promise<void> {
    const placed = this.#d.store.runningOn(hostId);
    const gone = placed.filter((id) => !running.has(id));
    if (gone.length > 0) {
      await this.#loseSessions(
        hostId,
        gone,
        `host ${hostId} came back without this session (its host-agent restarted and no longer runs it)`,
      );
    }
    const known = new Set(this.#d.store.sessionsOn(hostId));
    for (const sessionId of running) {
      if (known.has(sessionId)) continue;
      this.#d.log.info("stopping a session the host should not run", { host: hostId, session: sessionId });
      void this.#d.request(ws, TunnelMethods.sessionStop, {
        session_id: sessionId,
        reason: "the session is not placed on this host (it ended while the host was away)",
      });
    }
  }

  /**
   * Projects a host has that are not placed on it: those deleted while it was away are removed
   * there. A project is removed only when its project object says it no longer exists, never
   * merely because a placement is missing (that is user data).
   */
  async #projects(ws: WebSocket, hostId: string, reported: string[]): Promise<void> {
    const { store, log } = this.#d;
    const placed = new Set(store.projectsOn(hostId));
    for (const projectId of reported) {
      if (placed.has(projectId)) continue;
      if (await this.#d.projectExists(projectId)) {
        // Still exists. Unplaced, it lives here after all (its placement was lost); placed on
        // another host, this is a stale copy that is left alone for an operator to look at.
        if (store.projectHost(projectId) === null) store.placeProject(projectId, hostId);
        else
          log.warn("a host has a copy of a project placed elsewhere", { host: hostId, project: projectId });
        continue;
      }
      log.info("removing a deleted project from its host", { host: hostId, project: projectId });
      void this.#d.request(ws, TunnelMethods.projectRemove, { project_id: projectId });
    }
  }

  /** Releases the sessions' placements and ends each session with `reason`. */
  async #loseSessions(hostId: string, sessionIds: string[], reason: string): Promise<void> {
    this.#d.log.warn("ending the sessions of a lost host", {
      host: hostId,
      sessions: sessionIds.length,
      reason,
    });
    for (const sessionId of sessionIds) this.#d.store.release(sessionId);
    await Promise.all(
      sessionIds.map((sessionId) =>
        this.#d.hostLost(sessionId, reason).catch((err: unknown) =>
          this.#d.log.error("could not end a session of a lost host", {
            session: sessionId,
            error: errorMessage(err),
          }),
        ),
      ),
    );
  }

  #audit(a: HostAttachment, action: string, outcome: string): void {
    const entry = { at: Date.now(), token_id: a.tokenId ?? "unknown", action, target: a.hostId, outcome };
    this.#d
      .audit(entry)
      .catch((err: unknown) =>
        this.#d.log.error("could not write the audit log", { ...entry, error: errorMessage(err) }),
      );
  }
}
