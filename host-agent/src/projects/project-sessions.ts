/**
 * The sessions a project's container runs on this host: each a SessionRuntime (its tunnel to its
 * session object) bound to a socket of its own, known by id, with the workspace it works in and
 * the uid it runs as. Sessions are opened by a start or re-adopted from the runner's hello, and
 * leave when their runtime closes.
 */
import type { Logger } from "../../../lib/log.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { failureToRpcError } from "../../../protocol/caller-tools.js";
import type { RunnerAgent } from "../../../protocol/socket.js";
import type { HostNotice } from "../../../protocol/tunnel.js";
import type { ProjectNetwork, SessionNetworkSettings } from "../egress/project-network.js";
import type { ModelProxy } from "../models/model-proxy.js";
import type { RunnerLink } from "../sessions/runner-link.js";
import { SessionRuntime } from "../sessions/session-runtime.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import type { ContainerSockets } from "./container-sockets.js";
import type { SessionIdentity } from "./session-identity.js";

/** What of a container incarnation its sessions use. */
export interface SessionBox {
  runner: RunnerLink;
  sockets: ContainerSockets;
}

export interface RunningSession {
  session: SessionRuntime;
  /** "" for a re-adopted session (its workspace is not known here). */
  workspaceId: string;
  uid: number | null;
}

export interface ProjectSessionsOptions {
  models: ModelProxy;
  /** The project's side of the egress gate (each session gets a proxy credential there). */
  network: ProjectNetwork;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  logger: Logger;
  timing?: TunnelTiming | undefined;
  /** A session runs here now (started, or re-adopted). */
  onOpened(sessionId: string): void;
  /** A session's runtime closed; it is no longer in the table. */
  onClosed(box: SessionBox, sessionId: string): Promise<void>;
}

export class ProjectSessions {
  readonly #o: ProjectSessionsOptions;
  readonly #sessions = new Map<string, RunningSession>();

  constructor(options: ProjectSessionsOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#sessions.size;
  }

  ids(): string[] {
    return [...this.#sessions.keys()];
  }

  has(sessionId: string): boolean {
    return this.#sessions.has(sessionId);
  }

  get(sessionId: string): RunningSession | undefined {
    return this.#sessions.get(sessionId);
  }

  /** The session's runtime; one this host does not run is the socket's `session_ended` error. */
  runtime(sessionId: string): SessionRuntime {
    const entry = this.#sessions.get(sessionId);
    if (!entry) throw failureToRpcError("session_ended", "the session has ended on this host");
    return entry.session;
  }

  /** Whether a session (not closing) works in `workspaceId`. */
  usesWorkspace(workspaceId: string): boolean {
    return [...this.#sessions.values()].some((s) => s.workspaceId === workspaceId && !s.session.closing);
  }

  /** The uid of a session working in `workspaceId` (null: none, or sessions without uids). */
  uidIn(workspaceId: string): number | null {
    return (
      [...this.#sessions.values()].find((s) => s.workspaceId === workspaceId && s.uid !== null)?.uid ?? null
    );
  }

  /** A session served here: registered at once; `opened` settles once its socket listens. */
  open(
    box: SessionBox,
    peer: { sessionId: string; token: string } & SessionIdentity,
    workspaceId: string | null,
    models: { token: string; budgetUsd?: number | undefined } | null,
    network: { settings: SessionNetworkSettings; runtime: AgentRuntime; token?: string | undefined },
  ): { session: SessionRuntime; opened: Promise<void> } {
    const { sessionId } = peer;
    const session = new SessionRuntime({
      models: models && { proxy: this.#o.models, ...models },
      network: { project: this.#o.network, ...network },
      sessionId,
      sessionToken: peer.token,
      workerUrl: this.#o.workerUrl,
      hostToken: this.#o.hostToken,
      hostId: this.#o.hostId,
      logger: this.#o.logger,
      timing: this.#o.timing,
      runner: box.runner,
      pushConfig: (config) => box.sockets.setCallerToolsConfig(sessionId, config),
      pushToolsChanged: () => box.sockets.oublietteToolsChanged(sessionId),
      onClosed: (id) => {
        this.#sessions.delete(id);
        void this.#o.onClosed(box, id);
      },
    });
    // A re-adopted session's workspace is not known here; it blocks no workspace deletion.
    this.#sessions.set(sessionId, { session, workspaceId: workspaceId ?? "", uid: peer.uid });
    this.#o.onOpened(sessionId);
    return { session, opened: box.sockets.openSession(peer) };
  }

  /**
   * The runner reported its agents: sessions this host does not know yet are re-adopted, at once
   * (the runner's events for them follow its hello and must find them), each as the uid and gid
   * the runner runs it as; their sockets open meanwhile (their clients retry until then).
   */
  async adopt(box: SessionBox, agents: RunnerAgent[]): Promise<void> {
    const opening: Promise<void>[] = [];
    for (const agent of agents) {
      if (this.#sessions.has(agent.session_id) || agent.status === "idle") continue;
      const identity = { uid: agent.uid ?? null, gid: agent.gid ?? null };
      // Its budget is not known here after a restart; its usage goes on being counted.
      const models = agent.model_token !== undefined ? { token: agent.model_token } : null;
      const peer = { sessionId: agent.session_id, token: agent.session_token, ...identity };
      // Its network settings come from its object at the tunnel's hello; until then nothing is allowed.
      const network = {
        settings: { policies: [], approvals: "auto" as const, unknown: true },
        runtime: agent.runtime ?? "scripted",
        token: agent.proxy_token,
      };
      const { session, opened } = this.open(box, peer, null, models, network);
      session.adopt(agent);
      opening.push(opened);
    }
    await Promise.all(opening);
  }

  /** Ends every session (each session's object hears `reason`, and `notice` first when given). */
  async endAll(reason: string, notice?: HostNotice): Promise<void> {
    await Promise.all([...this.#sessions.values()].map(({ session }) => session.end(reason, notice)));
  }

  /** Leaves every session to the next host-agent: closes their tunnels, their agents go on. */
  async detachAll(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map(({ session }) => session.detach()));
  }

  reconnectAll(): void {
    for (const { session } of this.#sessions.values()) session.reconnectTunnel();
  }
}
