import { DurableObject } from "cloudflare:workers";
import { Limits } from "../../../protocol/limits.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import { clip, RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  CANCELLED,
  encodeError,
  encodeNotification,
  encodeRequest,
  encodeResult,
  type JsonRpcId,
  parseFrame,
} from "../../../protocol/rpc/messages.js";
import {
  type HostDisk,
  HostHelloParamsSchema,
  type RuntimeKind,
  type SessionSpec,
  TunnelMethod,
} from "../../../protocol/tunnel.js";
import { principalOf } from "../auth/principal-header.js";
import { config, type Env } from "../env.js";
import { type ErrorCode, fail, ok, type Result } from "../errors.js";
import { createLog, errorMessage } from "../log.js";
import { objects } from "../objects/keys.js";
import { MethodTable } from "../rpc/method-table.js";
import { requireTunnelVersion } from "../rpc/tunnel-version.js";
import { type HostAttachment, hostAttachment } from "./host-attachment.js";
import { HostStore } from "./host-store.js";

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
}

interface ConnectedHost {
  ws: WebSocket;
  attachment: HostAttachment & { runtime: RuntimeKind };
}

interface PendingRequest {
  /** The connection it was sent on: only that one can answer it. */
  ws: WebSocket;
  method: string;
  resolve(result: Result<unknown>): void;
  timer: ReturnType<typeof setTimeout>;
  /** The caller's name for it, when it may be cancelled (`cancelProjectRequest`). */
  cancelKey?: string;
}

/**
 * The one registry of host-agents (the host channel of the tunnel): which hosts are connected,
 * which host runs which session (placements), and the session_start/session_stop requests to
 * them. It keeps placements true: a host that connects reports the sessions it really runs and
 * is reconciled against them, and a host gone longer than the grace period has its sessions
 * ended with a host-lost reason and its placements released. Only lifecycle traffic passes here;
 * caller tool traffic uses per-session tunnels.
 */
export class HostRegistryDurableObject extends DurableObject<Env> {
  readonly #log = createLog({ component: "host-registry" });
  readonly #store: HostStore;
  readonly #pending = new Map<string, PendingRequest>();
  readonly #methods = new MethodTable<WebSocket>();
  /** Spawns waiting for a host to (re)connect. */
  readonly #hostWaiters = new Set<() => void>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new HostStore(ctx.storage.sql);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.#methods.handle(TunnelMethod.hostHello, HostHelloParamsSchema, (params, ws) =>
      this.#hello(ws, params),
    );
  }

  override async fetch(request: Request): Promise<Response> {
    const principal = principalOf(request);
    if (principal?.kind !== "host") return new Response("host token required", { status: 403 });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    const hostId = new URL(request.url).searchParams.get("host_id") ?? "";
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(hostId)) return new Response("host_id is required", { status: 400 });
    if (this.#store.isRevoked(principal.tokenId)) {
      return new Response("this host token was revoked", { status: 401 });
    }
    if (principal.hostId !== null && principal.hostId !== hostId) {
      this.#log.warn("refused a host token used for another host", {
        host: hostId,
        token: principal.tokenId,
      });
      return new Response(`this host token belongs to host ${principal.hostId}, not ${hostId}`, {
        status: 403,
      });
    }
    for (const old of this.ctx.getWebSockets(hostTag(hostId)))
      old.close(4000, "replaced by a newer connection");
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [hostTag(hostId)]);
    server.serializeAttachment({
      hostId,
      tokenId: principal.tokenId,
      runtime: null,
      maxSessions: 0,
      ready: false,
    } satisfies HostAttachment);
    this.#log.info("host connected", { host: hostId });
    return new Response(null, { status: 101, webSocket: client });
  }

  // ------------------------------------------------------------------ RPC from session objects

  /**
   * Places a session: on its project's host (projects are sticky: their container and workspaces
   * live there), or, for a project not placed yet, on the connected host with the most room. The
   * placement is recorded before the host is asked to start anything, so the session recognises
   * its tunnel. When the host it needs is not connected it waits a little for it to (re)connect;
   * when every host is full or draining it says so at once.
   */
  async place(input: {
    sessionId: string;
    projectId: string;
  }): Promise<Result<{ hostId: string; runtime: RuntimeKind }>> {
    const deadline = Date.now() + config(this.env).hostWaitMs;
    for (;;) {
      const chosen = this.#hostFor(input.projectId);
      if (chosen.ok) {
        const host = chosen.value;
        this.#store.placeProject(input.projectId, host.attachment.hostId);
        this.#store.place(input.sessionId, host.attachment.hostId);
        this.#ensureAlarm();
        return ok({ hostId: host.attachment.hostId, runtime: host.attachment.runtime });
      }
      if (chosen.error.code !== "no_host" || Date.now() >= deadline)
        return fail(chosen.error.code, chosen.error.message);
      await this.#hostConnected(deadline - Date.now());
    }
  }

  /**
   * Asks the session's host to start it: the workspace is made (idempotent; git-initialised or
   * cloned the first time), then the project's container ensured and the agent started in it. A
   * refusal releases the placement.
   */
  async start(input: {
    sessionId: string;
    projectId: string;
    workspaceId: string;
    workspace: { initGit: boolean; remoteUrl: string | null };
    project: ProjectSpec;
    spec: SessionSpec;
  }): Promise<Result<void>> {
    const hostId = this.#store.placement(input.sessionId);
    if (hostId === null) return fail("host_error", `session ${input.sessionId} is not placed on any host`);
    const host = this.#connectedHosts().find((h) => h.attachment.hostId === hostId);
    if (!host) {
      this.#store.release(input.sessionId);
      return fail(
        "host_error",
        `host ${hostId} disconnected before it could start session ${input.sessionId}`,
      );
    }
    const workspace = await this.#request(host.ws, TunnelMethod.workspaceCreate, {
      project_id: input.projectId,
      workspace_id: input.workspaceId,
      init_git: input.workspace.initGit,
      ...(input.workspace.remoteUrl ? { remote_url: input.workspace.remoteUrl } : {}),
      // A volume this makes is sized by the project's bound from the start.
      ...(input.project.limits.disk_mb !== undefined ? { disk_mb: input.project.limits.disk_mb } : {}),
    });
    const started = workspace.ok
      ? await this.#request(host.ws, TunnelMethod.sessionStart, {
          session_id: input.sessionId,
          project_id: input.projectId,
          workspace_id: input.workspaceId,
          project: input.project,
          spec: input.spec,
        })
      : workspace;
    if (started.ok) this.#store.markRunning(input.sessionId);
    else this.#store.release(input.sessionId);
    return started.ok ? ok(undefined) : fail(started.error.code, started.error.message);
  }

  /**
   * A request about a project's container or workspaces, sent to the project's host. `placeWith`
   * (container start) places a project that has no host yet; otherwise such a project has nothing
   * on any host and the answer says so.
   */
  async projectRequest(input: {
    projectId: string;
    method: string;
    params: Record<string, unknown>;
    placeWith?: boolean;
    /** Names the request for `cancelProjectRequest`. */
    cancelKey?: string;
    /** How long the host may take (a long exec); default: the ack timeout. */
    timeoutMs?: number;
  }): Promise<Result<unknown>> {
    let hostId = this.#store.projectHost(input.projectId);
    if (hostId === null) {
      if (!input.placeWith) {
        return fail(
          "not_running",
          `project ${input.projectId} has no container yet (container start, or spawn a session)`,
        );
      }
      const chosen = this.#hostFor(input.projectId);
      if (!chosen.ok) return chosen;
      hostId = chosen.value.attachment.hostId;
      this.#store.placeProject(input.projectId, hostId);
    }
    const host = this.#connectedHosts().find((h) => h.attachment.hostId === hostId);
    if (!host)
      return fail("no_host", `project ${input.projectId} lives on host ${hostId}, which is not connected`);
    return this.#request(
      host.ws,
      input.method,
      { project_id: input.projectId, ...input.params },
      { timeoutMs: input.timeoutMs, cancelKey: input.cancelKey },
    );
  }

  /**
   * Cancels the project request named `cancelKey`: the host hears `notifications/cancelled` for it
   * (the host-agent aborts the handler: an exec is killed) and the request answers `cancelled`
   * now. A request already answered is left alone.
   */
  async cancelProjectRequest(input: { cancelKey: string; reason: string }): Promise<{ cancelled: boolean }> {
    for (const [id, pending] of this.#pending) {
      if (pending.cancelKey !== input.cancelKey) continue;
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      trySend(pending.ws, encodeNotification(CANCELLED, { requestId: id, reason: input.reason }));
      pending.resolve(fail("cancelled", `${pending.method} was cancelled: ${input.reason}`));
      return { cancelled: true };
    }
    return { cancelled: false };
  }

  /** The project was deleted: its host removes its container and workspaces (now, or when it is back). */
  async removeProject(input: { projectId: string }): Promise<Result<void>> {
    const hostId = this.#store.projectHost(input.projectId);
    if (hostId === null) return ok(undefined);
    this.#store.forgetProject(input.projectId);
    const host = this.#connectedHosts().find((h) => h.attachment.hostId === hostId);
    // A host that is away hears of it when it is back: it reports a project that is not placed there.
    if (!host) return ok(undefined);
    const removed = await this.#request(host.ws, TunnelMethod.projectRemove, { project_id: input.projectId });
    return removed.ok ? ok(undefined) : fail(removed.error.code, removed.error.message);
  }

  /** Releases the session's placement and asks its host (if connected) to stop its droid. */
  async stopSession(input: { sessionId: string; reason: string }): Promise<Result<void>> {
    const hostId = this.#store.placement(input.sessionId);
    if (hostId === null) return ok(undefined);
    this.#store.release(input.sessionId);
    const host = this.#connectedHosts().find((h) => h.attachment.hostId === hostId);
    // A host that is away is told when it comes back: its report will name a session it should not run.
    if (!host) return ok(undefined);
    const stopped = await this.#request(host.ws, TunnelMethod.sessionStop, {
      session_id: input.sessionId,
      reason: input.reason,
    });
    return stopped.ok ? ok(undefined) : fail(stopped.error.code, stopped.error.message);
  }

  // ------------------------------------------------------------------ RPC from tools (operators)

  /**
   * The host a project is placed on, and how that host bounds its disk (null: the host is not
   * connected, or did not say); null when the project has no host yet.
   */
  async projectHost(projectId: string): Promise<{ hostId: string; disk: HostDisk | null } | null> {
    const hostId = this.#store.projectHost(projectId);
    if (hostId === null) return null;
    const disk = this.#connectedHosts().find((h) => h.attachment.hostId === hostId)?.attachment.disk ?? null;
    return { hostId, disk };
  }

  /** Connected and known hosts: runtime, load, capacity, drain state. */
  async list(): Promise<HostListing[]> {
    const connected = this.#connectedHosts();
    const listings = new Map<string, HostListing>();
    for (const host of connected) {
      const { hostId, runtime, maxSessions, disk } = host.attachment;
      const drained = this.#store.drainedSince(hostId);
      listings.set(hostId, {
        host_id: hostId,
        connected: true,
        runtime,
        sessions: this.#store.load(hostId),
        max_sessions: maxSessions,
        draining: drained !== null,
        missing_since: null,
        disk: disk ?? null,
      });
    }
    for (const { hostId, missingSince } of this.#store.missingHosts()) {
      if (listings.has(hostId)) continue;
      listings.set(hostId, {
        host_id: hostId,
        connected: false,
        runtime: null,
        sessions: this.#store.load(hostId),
        max_sessions: null,
        draining: this.#store.drainedSince(hostId) !== null,
        missing_since: new Date(missingSince).toISOString(),
        disk: null,
      });
    }
    return [...listings.values()].sort((a, b) => a.host_id.localeCompare(b.host_id));
  }

  /** Drains a host (no new placements; its sessions finish) or takes it back into service. */
  async drain(input: { hostId: string; drained: boolean }): Promise<HostListing | null> {
    this.#store.setDrained(input.hostId, input.drained, Date.now());
    this.#log.info(input.drained ? "host drained" : "host back in service", { host: input.hostId });
    return (await this.list()).find((h) => h.host_id === input.hostId) ?? null;
  }

  /**
   * Cuts a host off (its token was revoked): its host channel and session tunnels close; it is
   * missing from now on, so its sessions end after the grace period unless it comes back with a
   * new token.
   */
  async disconnectHost(input: { hostId: string; reason: string; tokenIds: string[] }): Promise<void> {
    this.#store.revokeTokens(input.tokenIds, Date.now());
    for (const ws of this.ctx.getWebSockets(hostTag(input.hostId))) {
      try {
        ws.close(4001, input.reason);
      } catch {
        // already closing
      }
    }
    const sessions = this.#store.sessionsOn(input.hostId);
    await Promise.all(
      sessions.map((id) =>
        objects
          .session(this.env, id)
          .dropTunnel(input.reason)
          .catch(() => {}),
      ),
    );
    if (sessions.length > 0) {
      this.#store.hostMissing(input.hostId, Date.now());
      this.#ensureAlarm();
    }
  }

  // ------------------------------------------------------------------ host channel

  override async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    if (typeof raw !== "string") {
      trySend(
        ws,
        encodeError(null, new RpcError(RpcErrorCode.InvalidRequest, "tunnel messages are JSON text")),
      );
      return;
    }
    const frame = parseFrame(raw, { maxBytes: Limits.frameBytes, maxDepth: Limits.jsonDepth });
    switch (frame.kind) {
      case "request":
        this.#serve(ws, frame.id, frame.method, frame.params);
        return;
      case "result":
      case "error": {
        const pending = frame.id === null ? undefined : this.#pending.get(String(frame.id));
        if (!pending) {
          if (frame.kind === "error")
            this.#log.warn("host reported an error", { error: frame.error.message });
          return;
        }
        this.#pending.delete(String(frame.id));
        clearTimeout(pending.timer);
        pending.resolve(frame.kind === "result" ? ok(frame.result) : hostRefusal(frame.error));
        return;
      }
      case "notification":
        return;
      case "invalid":
        this.#log.warn("bad host message", { reason: frame.error.message });
        trySend(ws, encodeError(frame.id, frame.error));
        return;
    }
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    const a = hostAttachment(ws);
    this.#log.info("host disconnected", { host: a?.hostId, code });
    // Nothing answers what was asked on this connection: fail it now, not at the ack timeout.
    for (const [id, pending] of this.#pending) {
      if (pending.ws !== ws) continue;
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      const why = `the host's connection closed before it answered ${pending.method}`;
      pending.resolve(fail("host_error", why));
    }
    if (a?.hostId && !this.#connectedHosts().some((h) => h.attachment.hostId === a.hostId)) {
      this.#store.hostMissing(a.hostId, Date.now());
      this.#ensureAlarm();
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm: hosts that stay gone

  override async alarm(): Promise<void> {
    const now = Date.now();
    const graceMs = config(this.env).hostGraceMs;
    const connected = new Set(this.#connectedHosts().map((h) => h.attachment.hostId));
    // Hosts holding placements that are not connected (a close we never heard of included).
    for (const hostId of this.#store.placedHosts()) {
      if (connected.has(hostId)) this.#store.hostBack(hostId);
      else this.#store.hostMissing(hostId, now);
    }
    for (const { hostId, missingSince } of this.#store.missingHosts()) {
      if (connected.has(hostId)) {
        this.#store.hostBack(hostId);
        continue;
      }
      if (now - missingSince < graceMs) continue;
      const reason = `host ${hostId} lost: its host-agent was not connected for ${Math.round((now - missingSince) / 1000)} s`;
      await this.#loseSessions(hostId, this.#store.sessionsOn(hostId), reason);
      // Its projects are free to start again elsewhere (with fresh workspaces: theirs were on the
      // lost host). If it comes back, it keeps the ones no other host took meanwhile.
      const stranded = this.#store.projectsOn(hostId);
      for (const projectId of stranded) this.#store.forgetProject(projectId);
      if (stranded.length > 0)
        this.#log.warn("released the projects of a lost host", { host: hostId, projects: stranded.length });
      this.#store.forgetHost(hostId);
    }
    this.#ensureAlarm(true);
  }

  // ------------------------------------------------------------------ private

  #serve(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const ready = hostAttachment(ws)?.ready === true;
    if (!ready && method !== TunnelMethod.hostHello) {
      trySend(ws, encodeError(id, new RpcError(RpcErrorCode.Unauthenticated, "send host_hello first")));
      return;
    }
    void Promise.resolve()
      .then(() => this.#methods.dispatch(method, params, ws))
      .then(
        (result) => trySend(ws, encodeResult(id, result)),
        (err: unknown) => {
          const error =
            err instanceof RpcError
              ? err
              : new RpcError(RpcErrorCode.InternalError, "internal error in the host registry");
          if (!(err instanceof RpcError))
            this.#log.error("host request failed", { method: clip(method), error: errorMessage(err) });
          trySend(ws, encodeError(id, error));
        },
      );
  }

  async #hello(
    ws: WebSocket,
    params: {
      v: number;
      host_id: string;
      runtime: RuntimeKind;
      sessions: string[];
      projects: { project_id: string; running: boolean }[];
      max_sessions: number;
      disk?: HostDisk | undefined;
    },
  ): Promise<unknown> {
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
    } satisfies HostAttachment);
    this.#store.hostBack(a.hostId);
    this.#audit(a, "host.register", "ok");
    this.#log.info("host ready", {
      host: a.hostId,
      runtime: params.runtime,
      sessions: params.sessions.length,
    });
    await this.#reconcile(ws, a.hostId, new Set(params.sessions));
    void this.#reconcileProjects(
      ws,
      a.hostId,
      params.projects.map((p) => p.project_id),
    );
    for (const wake of [...this.#hostWaiters]) wake();
    return { host_id: a.hostId };
  }

  /**
   * Makes placements match what the host really runs: sessions placed on it that it no longer
   * runs end (host lost); sessions it runs that are not placed on it (they ended while it was
   * away) are stopped. Placements still starting are left to their start request.
   */
  async #reconcile(ws: WebSocket, hostId: string, running: Set<string>): Promise<void> {
    const placed = this.#store.runningOn(hostId);
    const gone = placed.filter((id) => !running.has(id));
    if (gone.length > 0) {
      await this.#loseSessions(
        hostId,
        gone,
        `host ${hostId} came back without this session (its host-agent restarted and no longer runs it)`,
      );
    }
    const known = new Set(this.#store.sessionsOn(hostId));
    for (const sessionId of running) {
      if (known.has(sessionId)) continue;
      this.#log.info("stopping a session the host should not run", { host: hostId, session: sessionId });
      void this.#request(ws, TunnelMethod.sessionStop, {
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
  async #reconcileProjects(ws: WebSocket, hostId: string, reported: string[]): Promise<void> {
    const placed = new Set(this.#store.projectsOn(hostId));
    for (const projectId of reported) {
      if (placed.has(projectId)) continue;
      const info = await objects.project(this.env, projectId).info();
      if (info.ok) {
        // Still exists. Unplaced, it lives here after all (its placement was lost); placed on
        // another host, this is a stale copy that is left alone for an operator to look at.
        if (this.#store.projectHost(projectId) === null) this.#store.placeProject(projectId, hostId);
        else
          this.#log.warn("a host has a copy of a project placed elsewhere", {
            host: hostId,
            project: projectId,
          });
        continue;
      }
      this.#log.info("removing a deleted project from its host", { host: hostId, project: projectId });
      void this.#request(ws, TunnelMethod.projectRemove, { project_id: projectId });
    }
  }

  async #loseSessions(hostId: string, sessionIds: string[], reason: string): Promise<void> {
    this.#log.warn("ending the sessions of a lost host", {
      host: hostId,
      sessions: sessionIds.length,
      reason,
    });
    for (const sessionId of sessionIds) this.#store.release(sessionId);
    await Promise.all(
      sessionIds.map((sessionId) =>
        objects
          .session(this.env, sessionId)
          .hostLost(reason)
          .catch((err: unknown) =>
            this.#log.error("could not end a session of a lost host", {
              session: sessionId,
              error: errorMessage(err),
            }),
          ),
      ),
    );
  }

  #audit(a: HostAttachment, action: string, outcome: string): void {
    const entry = { at: Date.now(), token_id: a.tokenId ?? "unknown", action, target: a.hostId, outcome };
    objects
      .audit(this.env)
      .record(entry)
      .catch((err: unknown) =>
        this.#log.error("could not write the audit log", { ...entry, error: errorMessage(err) }),
      );
  }

  /** Keeps an alarm set while there is anything to watch: missing hosts, or placements at all. */
  #ensureAlarm(force = false): void {
    const graceMs = config(this.env).hostGraceMs;
    const missing = this.#store.missingHosts().map((h) => h.missingSince + graceMs);
    const watch = this.#store.hasPlacements() ? Date.now() + graceMs : null;
    const due = [...missing, ...(watch === null ? [] : [watch])];
    if (due.length === 0) return;
    const at = Math.max(Date.now() + 1_000, Math.min(...due));
    void this.ctx.storage.getAlarm().then((current) => {
      if (!force && current !== null && current <= at) return;
      return this.ctx.storage.setAlarm(at);
    });
  }

  /** Hosts with an open, registered connection that has not gone silent. */
  #connectedHosts(): ConnectedHost[] {
    const silentAfter = config(this.env).hostGraceMs;
    const now = Date.now();
    const hosts: ConnectedHost[] = [];
    for (const ws of this.ctx.getWebSockets()) {
      const a = hostAttachment(ws);
      if (!a?.ready || a.runtime === null || ws.readyState !== WebSocket.OPEN) continue;
      const lastPing = this.ctx.getWebSocketAutoResponseTimestamp(ws);
      if (lastPing !== null && now - lastPing.getTime() > silentAfter) continue;
      hosts.push({ ws, attachment: { ...a, runtime: a.runtime } });
    }
    return hosts;
  }

  /** The host a project's next session goes to, or why there is none. */
  #hostFor(projectId: string): Result<ConnectedHost> {
    const hosts = this.#connectedHosts();
    const placed = this.#store.projectHost(projectId);
    if (placed !== null) {
      const host = hosts.find((h) => h.attachment.hostId === placed);
      if (!host)
        return fail("no_host", `project ${projectId} lives on host ${placed}, which is not connected`);
      if (this.#store.drainedSince(placed) !== null) {
        return fail(
          "host_full",
          `project ${projectId} lives on host ${placed}, which is draining: it takes no new sessions`,
        );
      }
      const load = this.#store.load(placed);
      if (load >= host.attachment.maxSessions) {
        return fail(
          "host_full",
          `host ${placed} of project ${projectId} is full (runs ${load} of ${host.attachment.maxSessions})`,
        );
      }
      return ok(host);
    }
    const open = hosts.filter((h) => this.#store.drainedSince(h.attachment.hostId) === null);
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
      (h) =>
        `${h.attachment.hostId} runs ${this.#store.load(h.attachment.hostId)} of ${h.attachment.maxSessions}`,
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
      const free = host.attachment.maxSessions - this.#store.load(host.attachment.hostId);
      if (free <= 0) continue;
      const projects = this.#store.projectsOn(host.attachment.hostId).length;
      if (!best || free > best.free || (free === best.free && projects < best.projects))
        best = { host, free, projects };
    }
    return best?.host ?? null;
  }

  #hostConnected(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#hostWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, timeoutMs));
      this.#hostWaiters.add(wake);
    });
  }

  #request(
    ws: WebSocket,
    method: string,
    params: unknown,
    options: { timeoutMs?: number | undefined; cancelKey?: string | undefined } = {},
  ): Promise<Result<unknown>> {
    const id = crypto.randomUUID();
    const timeoutMs = options.timeoutMs ?? config(this.env).hostAckTimeoutMs;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve(fail("host_error", `the host did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, {
        ws,
        method,
        resolve,
        timer,
        ...(options.cancelKey ? { cancelKey: options.cancelKey } : {}),
      });
      if (!trySend(ws, encodeRequest(id, method, params))) {
        clearTimeout(timer);
        this.#pending.delete(id);
        resolve(fail("host_error", "the host's connection closed"));
      }
    });
  }
}

/** Host refusals that keep their meaning for the caller; any other is host_error. */
const HOST_REASONS: Record<string, ErrorCode> = {
  host_full: "host_full",
  busy: "conflict",
  not_found: "not_found",
  invalid: "invalid_arguments",
  not_running: "not_running",
  unsupported: "unsupported",
  image_not_found: "image_not_found",
};

/** A host's error answer as a typed failure (see HOST_REASONS). */
function hostRefusal(error: { message: string; data?: unknown }): Result<never> {
  const data = error.data;
  const reason = typeof data === "object" && data !== null && "reason" in data ? String(data.reason) : "";
  const code: ErrorCode = HOST_REASONS[reason] ?? "host_error";
  return fail(code, `the host refused: ${error.message}`);
}

function trySend(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    return true;
  } catch {
    return false;
  }
}

function hostTag(hostId: string): string {
  return `host:${hostId}`;
}
