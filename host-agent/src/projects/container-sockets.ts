/**
 * The sockets of one incarnation of a project's container, each in a directory only its peer's
 * uid may enter (`protocol/container-layout.ts`): the runner's relay socket and the model proxy
 * (root's), and one relay socket per session (that session's uid's). So a session's process can
 * reach no socket but its own, whatever secrets it found; the secrets are a second lock.
 */
import { mkdir, rm } from "node:fs/promises";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import {
  egressSocketPath,
  modelSocketPath,
  runnerSocketPath,
  sessionSocketPath,
} from "../../../protocol/container-layout.js";
import type { EgressGate } from "../egress/egress-gate.js";
import type { ProjectNetwork } from "../egress/project-network.js";
import type { ModelProxy } from "../models/model-proxy.js";
import type { ContainerHandlers } from "../socket/index.js";
import { RelaySocketServer, runnerOnlyAuth, sessionOnlyAuth } from "../socket/index.js";
import { claim, type OwnershipMode, ownerOf } from "./ownership.js";
import type { ProjectPaths } from "./project-paths.js";

export interface ContainerSocketsOptions {
  projectId: string;
  paths: ProjectPaths;
  ownership: OwnershipMode;
  runnerToken: string;
  handlers: ContainerHandlers;
  models: ModelProxy;
  /** The host's egress gate and this project's side of it. */
  egress: { gate: EgressGate; project: ProjectNetwork };
  logger: Logger;
}

/** Who a session's socket is for. */
export interface SessionPeer {
  sessionId: string;
  token: string;
  /** The session's uid and gid in the container (null under the process runtime). */
  uid: number | null;
  gid: number | null;
}

export class ContainerSockets {
  readonly #o: ContainerSocketsOptions;
  readonly #runner: RelaySocketServer;
  readonly #sessions = new Map<string, RelaySocketServer>();
  #closeModel: (() => Promise<void>) | null = null;
  #closeEgress: (() => Promise<void>) | null = null;
  #closed = false;

  constructor(options: ContainerSocketsOptions) {
    this.#o = options;
    this.#runner = new RelaySocketServer({
      path: runnerSocketPath(options.paths.socketDir),
      projectId: options.projectId,
      auth: runnerOnlyAuth(options.runnerToken),
      handlers: options.handlers,
      logger: options.logger,
      // The runner, and a second one to refuse: nobody else can reach this socket.
      maxConnections: 4,
    });
  }

  /** Makes the directories and starts the runner's and the model proxy's sockets. */
  async open(): Promise<void> {
    const { paths, ownership } = this.#o;
    await mkdir(paths.socketDir, { recursive: true });
    await claim(paths.socketDir, ownerOf(ownership, { kind: "socket-root" }));
    await mkdir(paths.runnerSocketDir, { recursive: true });
    await claim(paths.runnerSocketDir, ownerOf(ownership, { kind: "runner-sockets" }));
    await mkdir(paths.sessionsSocketDir, { recursive: true });
    await claim(paths.sessionsSocketDir, ownerOf(ownership, { kind: "sessions-root" }));
    await this.#runner.start();
    this.#closeModel = await this.#o.models.listen(modelSocketPath(paths.socketDir));
    const { gate, project } = this.#o.egress;
    this.#closeEgress = await gate.listen(egressSocketPath(paths.socketDir), project, this.#o.runnerToken);
  }

  /** Serves a session's own socket (idempotent), in a directory only its uid may enter. */
  async openSession(peer: SessionPeer): Promise<void> {
    if (this.#closed || this.#sessions.has(peer.sessionId)) return;
    const { paths, ownership } = this.#o;
    const dir = paths.sessionSocketDir(peer.sessionId);
    const server = new RelaySocketServer({
      path: sessionSocketPath(paths.socketDir, peer.sessionId),
      projectId: this.#o.projectId,
      auth: sessionOnlyAuth(peer.sessionId, peer.token),
      handlers: this.#o.handlers,
      logger: this.#o.logger.child({ session: peer.sessionId }),
    });
    this.#sessions.set(peer.sessionId, server);
    await mkdir(dir, { recursive: true });
    const owner =
      peer.uid !== null && peer.gid !== null
        ? ownerOf(ownership, { kind: "session-sockets", uid: peer.uid, gid: peer.gid })
        : null;
    await claim(dir, owner);
    await server.start();
  }

  /** Stops serving a session's socket and removes its directory (its secret is void now). */
  async closeSession(sessionId: string): Promise<void> {
    const server = this.#sessions.get(sessionId);
    if (!server) return;
    this.#sessions.delete(sessionId);
    await server.close();
    await rm(this.#o.paths.sessionSocketDir(sessionId), { recursive: true, force: true });
  }

  /** Pushes `caller_tools_config` to a session's clients (and to each new one after its hello). */
  setCallerToolsConfig(sessionId: string, config: CallerToolsConfig): void {
    this.#sessions.get(sessionId)?.setCallerToolsConfig(sessionId, config);
  }

  /** Tells a session's clients to list Oubliette's tools again. */
  oublietteToolsChanged(sessionId: string): void {
    this.#sessions.get(sessionId)?.oublietteToolsChanged(sessionId);
  }

  /** Closes every socket (the files go; the session directories stay for a re-adopting host-agent). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([this.#runner.close(), ...[...this.#sessions.values()].map((s) => s.close())]);
    this.#sessions.clear();
    await this.#closeModel?.();
    this.#closeModel = null;
    await this.#closeEgress?.();
    this.#closeEgress = null;
  }
}
