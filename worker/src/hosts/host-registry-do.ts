import { DurableObject } from "cloudflare:workers";
import type { ProjectSpec } from "../../../protocol/project.js";
import type { SetupSpec } from "../../../protocol/setup.js";
import type { HostDisk, SessionSpec } from "../../../protocol/tunnel.js";
import { principalOf } from "../auth/principal-header.js";
import { config, type Env } from "../env.js";
import type { Result } from "../errors.js";
import { createLog } from "../log.js";
import { objects } from "../objects/keys.js";
import type { WorkspaceSetup } from "../projects/project-config.js";
import { type HostAttachment, hostAttachment } from "./host-attachment.js";
import { type ConnectedHost, connectedHosts, hostTag } from "./host-channels.js";
import { type HostListing, listHosts } from "./host-listing.js";
import { HostPlacement, type Placed } from "./host-placement.js";
import { HostReconcile } from "./host-reconcile.js";
import { HostRequests } from "./host-requests.js";
import { HostStore } from "./host-store.js";
import { PendingHostRequests } from "./pending-host-requests.js";

export type { HostListing } from "./host-listing.js";

/**
 * The one registry of host-agents (the host channel of the tunnel): which hosts are connected,
 * which host runs which session and project (placements), and the requests to them. A thin RPC
 * shell over its parts: HostPlacement chooses and records hosts, HostRequests carries the channel
 * traffic both ways (over PendingHostRequests), HostReconcile keeps placements true when hosts
 * connect and when they stay gone past the grace period (the alarm). Only lifecycle traffic passes
 * here; caller tool traffic uses per-session tunnels.
 */
export class HostRegistryDurableObject extends DurableObject<Env> {
  readonly #log = createLog({ component: "host-registry" });
  readonly #store: HostStore;
  readonly #pending: PendingHostRequests;
  readonly #placement: HostPlacement;
  readonly #reconcile: HostReconcile;
  readonly #requests: HostRequests;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const store = new HostStore(ctx.storage.sql);
    this.#store = store;
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    const connected = () => this.#connected();
    this.#pending = new PendingHostRequests({ ackTimeoutMs: () => config(env).hostAckTimeoutMs });
    this.#placement = new HostPlacement({
      store,
      connected,
      waitMs: () => config(env).hostWaitMs,
      placed: () => this.#reconcile.watch(),
    });
    this.#reconcile = new HostReconcile({
      store,
      connected,
      request: (ws, method, params) => this.#pending.send(ws, method, params),
      hostLost: (sessionId, reason) => objects.session(env, sessionId).hostLost(reason),
      projectExists: async (projectId) => (await objects.project(env, projectId).info()).ok,
      hostReady: () => this.#placement.hostReady(),
      audit: (entry) => objects.audit(env).record(entry),
      alarms: ctx.storage,
      graceMs: () => config(env).hostGraceMs,
      log: this.#log,
    });
    this.#requests = new HostRequests({
      store,
      placement: this.#placement,
      pending: this.#pending,
      hello: (ws, params) => this.#reconcile.hello(ws, params),
      audit: (entry) => objects.audit(env).record(entry),
      log: this.#log,
    });
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
   * when every host is full or draining it says so at once. A project whose host drains moves to
   * another (its workspaces stay behind, which the answer says); one whose host is away moves only
   * with `relocate`.
   */
  async place(input: { sessionId: string; projectId: string; relocate?: boolean }): Promise<Result<Placed>> {
    return this.#placement.place(input);
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
    workspace: WorkspaceSetup;
    project: ProjectSpec;
    spec: SessionSpec;
    setup?: SetupSpec | null;
  }): Promise<Result<void>> {
    return this.#requests.start(input);
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
    /** Hears the host's progress for the project while the request waits (a function passed over RPC). */
    onProgress?: (message: string) => unknown;
  }): Promise<Result<unknown>> {
    return this.#requests.projectRequest(input);
  }

  /**
   * Cancels the project request named `cancelKey`: the host hears `notifications/cancelled` for it
   * (the host-agent aborts the handler: an exec is killed) and the request answers `cancelled`
   * now. A request already answered is left alone.
   */
  async cancelProjectRequest(input: { cancelKey: string; reason: string }): Promise<{ cancelled: boolean }> {
    return this.#requests.cancelProjectRequest(input);
  }

  /** The project was deleted: its host removes its container and workspaces (now, or when it is back). */
  async removeProject(input: { projectId: string }): Promise<Result<void>> {
    return this.#requests.removeProject(input);
  }

  /** Releases the session's placement and asks its host (if connected) to stop its droid. */
  async stopSession(input: { sessionId: string; reason: string }): Promise<Result<void>> {
    return this.#requests.stopSession(input);
  }

  // ------------------------------------------------------------------ RPC from tools (operators)

  /**
   * The host a project is placed on, and how that host bounds its disk (null: the host is not
   * connected, or did not say); null when the project has no host yet.
   */
  async projectHost(projectId: string): Promise<{ hostId: string; disk: HostDisk | null } | null> {
    return this.#placement.projectHost(projectId);
  }

  /** Connected and known hosts: runtime, load, capacity, drain state. */
  async list(): Promise<HostListing[]> {
    return listHosts(this.#connected(), this.#store);
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
  async disconnectHost(input: {
    hostId: string;
    reason: string;
    tokenIds: string[];
  }): Promise<{ known: boolean }> {
    const known =
      this.ctx.getWebSockets(hostTag(input.hostId)).length > 0 || this.#store.knowsHost(input.hostId);
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
    // No longer listed once its sessions are over (at once when it runs none).
    this.#store.setHostRevoked(input.hostId, Date.now());
    if (sessions.length > 0) this.#reconcile.missing(input.hostId);
    else this.#store.forgetHost(input.hostId);
    return { known };
  }

  // ------------------------------------------------------------------ host channel

  override async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    this.#requests.message(ws, raw);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    const a = hostAttachment(ws);
    this.#log.info("host disconnected", { host: a?.hostId, code });
    this.#pending.closed(ws);
    if (a?.hostId) this.#reconcile.channelClosed(a.hostId);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1006);
  }

  // ------------------------------------------------------------------ alarm: hosts that stay gone

  override async alarm(): Promise<void> {
    await this.#reconcile.alarm();
  }

  /** Hosts with an open, registered channel that has not gone silent. */
  #connected(): ConnectedHost[] {
    return connectedHosts(this.ctx, config(this.env).hostGraceMs);
  }
}
