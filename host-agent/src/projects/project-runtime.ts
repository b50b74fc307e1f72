/**
 * One project on this host: its container (the "box", started on demand and re-adopted after a
 * host-agent restart), the container's socket, the runner in it, and the sessions running as
 * agent processes inside it, each bound to the socket by its own secret. Lifecycle changes
 * (ensure, stop, refresh, remove) run one at a time.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { agentImageRef } from "../../../protocol/agent-runtimes.js";
import { failureToRpcError } from "../../../protocol/caller-tools.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import type { RunnerAgent } from "../../../protocol/socket.js";
import { AgentEnv, MODEL_SOCKET_NAME } from "../../../protocol/socket.js";
import type { SessionSpec } from "../../../protocol/tunnel.js";
import type {
  ContainerExecParams,
  ContainerExecResult,
  ContainerLogsParams,
  ContainerLogsResult,
} from "../../../protocol/tunnel-projects.js";
import type { ModelProxy } from "../models/model-proxy.js";
import type { AdoptedProject, AgentRuntime, Workload } from "../runtime/types.js";
import { RunnerLink } from "../sessions/runner-link.js";
import { SessionRuntime } from "../sessions/session-runtime.js";
import { RelaySocketServer, SocketSecrets } from "../socket/index.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { HostError } from "./errors.js";
import { resolveLimits } from "./limits.js";
import type { OwnershipMode } from "./ownership.js";
import type { ProjectPaths } from "./project-paths.js";
import { Workspaces } from "./workspaces.js";

/** Which agent a session runs (default: the scripted droid). */
export type SessionAgent = NonNullable<SessionSpec["agent"]>;

export interface ProjectRuntimeOptions {
  projectId: string;
  /** The host's model proxy: each container gets a model socket of its own. */
  models: ModelProxy;
  paths: ProjectPaths;
  runtime: AgentRuntime;
  ownership: OwnershipMode;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  logger: Logger;
  timing?: TunnelTiming | undefined;
  /** A session of this project runs on this host now (started, or re-adopted from the runner's hello). */
  onSessionOpened(sessionId: string): void;
  /** A session of this project closed on this host. */
  onSessionClosed(sessionId: string): void;
  /** The project is gone from this host (removed). */
  onRemoved(projectId: string): void;
}

/** What serves one incarnation of the container: its sockets, the secrets it takes, its runner. */
interface Serving {
  secrets: SocketSecrets;
  socket: RelaySocketServer;
  runner: RunnerLink;
  /** Closes the model socket (set once it listens). */
  closeModel: (() => Promise<void>) | null;
}

async function closeServing(serving: Serving): Promise<void> {
  await Promise.all([serving.socket.close(), serving.closeModel?.()]);
  serving.closeModel = null;
}

/** One incarnation of the project's container. */
interface Box extends Serving {
  workload: Workload;
  isolation: boolean;
  stopping: boolean;
}

/** How long a re-adopted container's runner gets to say hello (it retries every second at most). */
const ADOPT_HELLO_WAIT_MS = 10_000;

export class ProjectRuntime {
  readonly workspaces: Workspaces;
  readonly #o: ProjectRuntimeOptions;
  readonly #log: Logger;
  readonly #sessions = new Map<string, { session: SessionRuntime; workspaceId: string }>();
  #box: Box | null = null;
  #ephemeral = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: ProjectRuntimeOptions) {
    this.#o = options;
    this.#log = options.logger.child({ project: options.projectId });
    this.workspaces = new Workspaces({
      paths: options.paths,
      ownership: options.ownership,
      containerRoot: options.runtime.paths({
        socketDir: options.paths.socketDir,
        workspacesDir: options.paths.workspaces,
      }).workspaceRoot,
      logger: this.#log,
    });
  }

  get projectId(): string {
    return this.#o.projectId;
  }

  /** Whether the project's container runs (and is not being stopped). */
  get running(): boolean {
    return this.#box !== null && !this.#box.stopping;
  }

  get containerId(): string | null {
    return this.#box?.workload.id ?? null;
  }

  get sessionIds(): string[] {
    return [...this.#sessions.keys()];
  }

  /** Whether a session of this project works in `workspaceId`. */
  usesWorkspace(workspaceId: string): boolean {
    return [...this.#sessions.values()].some((s) => s.workspaceId === workspaceId && !s.session.closing);
  }

  /** Starts the container unless it runs; `ephemeral` marks a project of its own for one v2 session. */
  ensure(spec: ProjectSpec, ephemeral = false): Promise<{ containerId: string; started: boolean }> {
    return this.#serial(() => this.#ensure(spec, ephemeral));
  }

  /** Stops the container; every session in it ends with `reason`. Idempotent. */
  stop(reason: string): Promise<void> {
    return this.#serial(() => this.#stop(reason));
  }

  /** Stops the container and removes its socket directory and every workspace of it here. */
  remove(): Promise<void> {
    return this.#serial(async () => {
      await this.#stop("the project was removed from this host");
      await rm(this.#o.paths.root, { recursive: true, force: true });
      await rm(this.#o.paths.socketDir, { recursive: true, force: true });
      this.#log.info("project removed");
      this.#o.onRemoved(this.#o.projectId);
    });
  }

  /** Recreates the container from the current image; refused while a session runs. */
  refresh(spec: ProjectSpec): Promise<{ containerId: string }> {
    return this.#serial(async () => {
      if (this.#sessions.size > 0) {
        throw new HostError(
          "busy",
          `the project has ${this.#sessions.size} running session(s); stop them first`,
        );
      }
      await this.#stop("the project's container is being refreshed");
      const { containerId } = await this.#ensure(spec, this.#ephemeral);
      return { containerId };
    });
  }

  /**
   * Starts a session's agent in the running container, in `/workspace/<workspaceId>`. A CLI agent
   * gets a placeholder model credential, by which the model proxy knows (and meters) the session.
   */
  async startSession(
    sessionId: string,
    workspaceId: string,
    env: Record<string, string>,
    agent: SessionAgent = { runtime: "scripted" },
  ): Promise<void> {
    if (this.#sessions.has(sessionId)) return;
    const box = this.#box;
    if (!box || box.stopping) throw new HostError("not_running", "the project's container is not running");
    if (!(await this.workspaces.exists(workspaceId)))
      throw new HostError(
        "not_found",
        `workspace ${workspaceId} does not exist in this project on this host`,
      );
    const uid = box.isolation ? await this.workspaces.uidOf(workspaceId) : null;
    const paths = this.#o.runtime.paths({
      socketDir: this.#o.paths.socketDir,
      workspacesDir: this.#o.paths.workspaces,
    });
    const modelToken = agent.runtime === "scripted" ? null : `oubm_${randomBytes(24).toString("hex")}`;
    const models = modelToken === null ? null : { token: modelToken, budgetUsd: agent.max_cost_usd };
    const session = this.#session(box, sessionId, randomBytes(32).toString("hex"), workspaceId, models);
    session.start({
      cwd: join(paths.workspaceRoot, workspaceId),
      env: { ...env, [AgentEnv.socketPath]: paths.socketPath },
      ...(uid !== null ? { uid, gid: uid } : {}),
      agent: {
        runtime: agent.runtime,
        ...(agent.model !== undefined ? { model: agent.model } : {}),
        ...(modelToken !== null ? { model_token: modelToken } : {}),
      },
    });
  }

  /** Stops one session's agent; the container stays. Stopping one this host does not run is not an error. */
  async stopSession(sessionId: string, reason: string): Promise<void> {
    await this.#sessions.get(sessionId)?.session.stop(reason);
  }

  /** Serves a container an earlier host-agent left running, and the sessions its runner reports. */
  async adopt(adopted: AdoptedProject): Promise<void> {
    this.#ephemeral = adopted.ephemeral;
    // Its sessions' secrets come with the runner's hello; clients that are back sooner wait.
    const serving = this.#serving(adopted.runnerToken, false);
    await this.#openSocket(serving);
    const box: Box = {
      ...serving,
      workload: adopted.workload,
      isolation: adopted.isolation,
      stopping: false,
    };
    this.#box = box;
    this.#watch(box);
    const hello = await box.runner.waitConnected(ADOPT_HELLO_WAIT_MS);
    box.secrets.settle();
    this.#log.info({ runner: hello, sessions: this.#sessions.size }, "project re-adopted");
  }

  reconnectTunnels(): void {
    for (const { session } of this.#sessions.values()) session.reconnectTunnel();
  }

  /** Leaves the container running for the next host-agent: closes the tunnels and the socket. */
  async detach(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map(({ session }) => session.detach()));
    if (this.#box) await closeServing(this.#box);
  }

  async exec(params: ContainerExecParams, signal?: AbortSignal): Promise<ContainerExecResult> {
    return this.#running().workload.exec(params, signal);
  }

  async logs(params: ContainerLogsParams): Promise<ContainerLogsResult> {
    return this.#running().workload.logs(params);
  }

  #running(): Box {
    const box = this.#box;
    if (!box || box.stopping) throw new HostError("not_running", "the project's container is not running");
    return box;
  }

  async #ensure(spec: ProjectSpec, ephemeral: boolean): Promise<{ containerId: string; started: boolean }> {
    if (this.#box && !this.#box.stopping) return { containerId: this.#box.workload.id, started: false };
    this.#ephemeral = ephemeral;
    const isolation = spec.workspace_isolation;
    await this.workspaces.prepare(isolation);
    const runnerToken = randomBytes(32).toString("hex");
    // The socket listens before the runner starts.
    const serving = this.#serving(runnerToken);
    await this.#openSocket(serving);
    let workload: Workload;
    try {
      workload = await this.#o.runtime.launch({
        projectId: this.#o.projectId,
        runnerToken,
        socketDir: this.#o.paths.socketDir,
        workspacesDir: this.#o.paths.workspaces,
        env: { ...spec.env },
        // Without an image of its own, a project runs in its agent runtime's image.
        image: spec.image ?? (spec.agent ? agentImageRef(spec.agent) : undefined),
        limits: resolveLimits(spec.limits),
        isolation,
        ephemeral,
      });
    } catch (err) {
      await closeServing(serving);
      await rm(this.#o.paths.socketDir, { recursive: true, force: true });
      throw err;
    }
    const box: Box = { ...serving, workload, isolation, stopping: false };
    this.#box = box;
    this.#watch(box);
    return { containerId: workload.id, started: true };
  }

  async #stop(reason: string): Promise<void> {
    const box = this.#box;
    if (!box) return;
    box.stopping = true;
    // Each session's object hears why (session_end) before its agent goes with the container.
    await Promise.all([...this.#sessions.values()].map(({ session }) => session.end(reason)));
    await box.workload
      .stop(reason)
      .catch((err: Error) => this.#log.warn({ err: err.message }, "container stop failed"));
    await closeServing(box);
    await rm(this.#o.paths.socketDir, { recursive: true, force: true });
    if (this.#box === box) this.#box = null;
  }

  #serving(runnerToken: string, settled = true): Serving {
    const secrets = new SocketSecrets(runnerToken, settled);
    const runner = new RunnerLink({
      logger: this.#log,
      onAgents: (agents) => this.#onAgents(serving, agents),
    });
    const socket = new RelaySocketServer({
      path: join(this.#o.paths.socketDir, "relay.sock"),
      projectId: this.#o.projectId,
      auth: secrets,
      logger: this.#log,
      handlers: {
        callerTool: async (sessionId, request, ctx) => {
          const entry = this.#sessions.get(sessionId);
          if (!entry) throw failureToRpcError("session_ended", "the session has ended on this host");
          return entry.session.callerTool(request, ctx);
        },
        oubliette: async (sessionId, method, params, ctx) => {
          const entry = this.#sessions.get(sessionId);
          if (!entry) throw failureToRpcError("session_ended", "the session has ended on this host");
          return entry.session.oubliette(method, params, ctx);
        },
        runnerConnected: (connection, agents) => runner.attach(connection, agents),
        runnerGone: (connection) => runner.detach(connection),
        agentEvents: (sessionId, events) => this.#sessions.get(sessionId)?.session.agentEvents(events),
      },
    });
    const serving: Serving = { secrets, socket, runner, closeModel: null };
    return serving;
  }

  async #openSocket(box: Serving): Promise<void> {
    // Reachable by the container's users (uid 1000, or the workspaces' uids); the socket is 0666.
    await mkdir(this.#o.paths.socketDir, { recursive: true, mode: 0o711 });
    await chmod(this.#o.paths.socketDir, 0o711);
    await box.socket.start();
    box.closeModel = await this.#o.models.listen(join(this.#o.paths.socketDir, MODEL_SOCKET_NAME));
  }

  /** The runner reported its agents: sessions this host does not know yet are re-adopted. */
  #onAgents(box: Serving, agents: RunnerAgent[]): void {
    for (const agent of agents) {
      if (this.#sessions.has(agent.session_id) || agent.status === "idle") continue;
      // Its budget is not known here after a restart; its usage goes on being counted.
      const models = agent.model_token !== undefined ? { token: agent.model_token } : null;
      const session = this.#session(box, agent.session_id, agent.session_token, null, models);
      session.adopt(agent);
    }
    box.secrets.settle();
  }

  #session(
    box: Serving,
    sessionId: string,
    token: string,
    workspaceId: string | null,
    models: { token: string; budgetUsd?: number | undefined } | null,
  ): SessionRuntime {
    const session = new SessionRuntime({
      models: models && { proxy: this.#o.models, ...models },
      sessionId,
      sessionToken: token,
      workerUrl: this.#o.workerUrl,
      hostToken: this.#o.hostToken,
      hostId: this.#o.hostId,
      logger: this.#log,
      timing: this.#o.timing,
      runner: box.runner,
      pushConfig: (config) => box.socket.setCallerToolsConfig(sessionId, config),
      pushToolsChanged: () => box.socket.oublietteToolsChanged(sessionId),
      onClosed: (id) => this.#sessionClosed(box, id),
    });
    box.secrets.addSession(sessionId, token);
    // A re-adopted session's workspace is not known here; it blocks no workspace deletion.
    this.#sessions.set(sessionId, { session, workspaceId: workspaceId ?? "" });
    this.#o.onSessionOpened(sessionId);
    return session;
  }

  #sessionClosed(box: Serving, sessionId: string): void {
    box.secrets.removeSession(sessionId);
    box.socket.dropSession(sessionId);
    this.#sessions.delete(sessionId);
    this.#o.onSessionClosed(sessionId);
    // A v2 session's own project goes with it, as its container did.
    if (this.#ephemeral && this.#sessions.size === 0 && this.#box?.stopping === false) void this.remove();
  }

  #watch(box: Box): void {
    void box.workload.exited.then(async (exit) => {
      if (box.stopping || this.#box !== box) return;
      const how = exit.exitCode === null ? "unknown" : String(exit.exitCode);
      this.#log.warn({ exit_code: exit.exitCode }, "the project's container ended");
      await this.stop(`the project's container ended (exit code ${how})`);
      if (this.#ephemeral) await this.remove();
    });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(fn);
    this.#chain = next.catch(() => {});
    return next;
  }
}
