/**
 * One project on this host: its volume (bounded), its container (the "box", started on demand and
 * re-adopted after a host-agent restart), the container's sockets, the runner in it, and the
 * sessions running as agent processes inside it, each as a uid of its own and bound to a socket
 * of its own. Lifecycle changes (ensure, stop, refresh, remove) run one at a time.
 */
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import type { Logger } from "../../../lib/log.js";
import { DEFAULT_WORKSPACE_ID } from "../../../protocol/ids.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import type { NetworkBlocked } from "../../../protocol/network-activity.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import type { SetupResult, SetupSpec } from "../../../protocol/setup.js";
import type { SessionGit } from "../../../protocol/tunnel-git.js";
import { diskLimitError, diskLimitNotice } from "../disk/disk-limit.js";
import type { DiskSettings } from "../disk/disk-settings.js";
import { DiskWatch } from "../disk/disk-watch.js";
import { ProjectVolume, type VolumeUsage } from "../disk/project-volume.js";
import type { EgressGate } from "../egress/egress-gate.js";
import { ProjectNetwork } from "../egress/project-network.js";
import { AgentGit } from "../git/agent-git.js";
import { ProjectGit } from "../git/project-git.js";
import type { ModelProxy } from "../models/model-proxy.js";
import { RuntimeError } from "../runtime/errors.js";
import type { AdoptedProject, AgentRuntime, Workload } from "../runtime/types.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { agentLaunch, type SessionAgent } from "./agent-launch.js";
import { ContainerCommands } from "./container-commands.js";
import { ContainerSource } from "./container-source.js";
import { HostError } from "./errors.js";
import type { HostGitSettings } from "./git.js";
import { resolveLimits } from "./limits.js";
import type { OwnershipMode } from "./ownership.js";
import { type Box, closeBox, newBox } from "./project-box.js";
import type { ProjectPaths } from "./project-paths.js";
import { ProjectSessions, type SessionBox } from "./project-sessions.js";
import { RecordStore } from "./record-store.js";
import { SessionIdentities } from "./session-identity.js";
import { WorkspaceSetup } from "./workspace-setup.js";
import { Workspaces } from "./workspaces.js";

export interface ProjectRuntimeOptions {
  projectId: string;
  /** The host's model proxy: each container gets a model socket of its own. */
  models: ModelProxy;
  /** The host's egress gate: each container gets an egress socket of its own. */
  egress: EgressGate;
  /** A user's command or the setup had a connection refused (an audit entry on the Worker). */
  onNetworkBlocked(who: "exec" | "setup", event: NetworkBlocked): void;
  paths: ProjectPaths;
  runtime: AgentRuntime;
  ownership: OwnershipMode;
  disk: DiskSettings;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  logger: Logger;
  timing?: TunnelTiming | undefined;
  /** What the host's git may reach and with which credentials. */
  git: HostGitSettings;
  /** A session of this project runs on this host now (started, or re-adopted from the runner's hello). */
  onSessionOpened(sessionId: string): void;
  /** A session of this project closed on this host. */
  onSessionClosed(sessionId: string): void;
  /** The project is gone from this host (removed). */
  onRemoved(projectId: string): void;
}

/** A started (or already running) container, and what it could not be given as asked. */
export interface EnsuredContainer {
  containerId: string;
  started: boolean;
  warnings?: string[];
}

/** How long a new container's runner may take to connect before a setup gives up on it. */
const RUNNER_WAIT_MS = 30_000;
/** How long a re-adopted container's runner gets to say hello (it retries every second at most). */
const ADOPT_HELLO_WAIT_MS = 10_000;

export class ProjectRuntime {
  readonly workspaces: Workspaces;
  /** The project's git here: its own repository, and git run in its workspaces (docs/git.md). */
  readonly git: ProjectGit;
  readonly #agentGit: AgentGit;
  readonly #o: ProjectRuntimeOptions;
  readonly #log: Logger;
  readonly #record: RecordStore;
  /** What its container is made from (image, pin, devcontainer.json). */
  readonly #source: ContainerSource;
  readonly #volume: ProjectVolume;
  readonly #identities: SessionIdentities;
  readonly #diskWatch: DiskWatch;
  readonly #sessions: ProjectSessions;
  /** The project's side of the egress gate: its policies and who each connection is. */
  readonly #network: ProjectNetwork;
  /** Commands in the running container: exec, the host's git in a workspace, logs. */
  readonly commands: ContainerCommands;
  /** The workspaces' setups (run before a workspace's first agent, and on demand). */
  readonly setup: WorkspaceSetup;
  #box: Box | null = null;
  #ephemeral = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: ProjectRuntimeOptions) {
    this.#o = options;
    this.#log = options.logger.child({ project: options.projectId });
    const { paths } = options;
    this.#record = new RecordStore(paths.record);
    this.#volume = new ProjectVolume(paths, options.disk, this.#log);
    this.#identities = new SessionIdentities({
      paths,
      record: this.#record,
      ownership: options.ownership,
      separate: options.runtime.separatesSessions,
    });
    this.#diskWatch = new DiskWatch({
      volume: this.#volume,
      intervalMs: options.disk.checkMs,
      logger: this.#log,
      onExceeded: (usage) => void this.#diskExceeded(usage),
    });
    this.workspaces = new Workspaces({
      paths,
      ownership: options.ownership,
      record: this.#record,
      containerRoot: this.#workloadPaths().workspaceRoot,
      volume: () => this.#volume.ensure(),
      logger: this.#log,
    });
    this.#network = new ProjectNetwork({
      projectId: options.projectId,
      separate: options.runtime.separatesSessions,
      logger: this.#log,
      onProjectBlocked: options.onNetworkBlocked,
    });
    this.#sessions = new ProjectSessions({
      models: options.models,
      network: this.#network,
      workerUrl: options.workerUrl,
      hostToken: options.hostToken,
      hostId: options.hostId,
      logger: this.#log,
      timing: options.timing,
      onOpened: options.onSessionOpened,
      onClosed: (box, sessionId) => this.#sessionClosed(box, sessionId),
    });
    this.commands = new ContainerCommands({
      projectId: options.projectId,
      workload: () => this.#running().workload as Workload,
      workspaces: this.workspaces,
      sessions: this.#sessions,
      separate: options.runtime.separatesSessions,
      network: this.#network,
      proxyPort: () => this.#box?.runner.ports.egress ?? null,
      execHome: this.#identities.execHome(this.#workloadPaths().homesRoot),
    });
    this.git = new ProjectGit(this.commands, this.workspaces, paths, options.git);
    this.setup = new WorkspaceSetup({
      commands: this.commands,
      network: this.#network,
      record: this.#record,
      logger: this.#log,
    });
    this.#agentGit = new AgentGit(this.git, async () => (await this.#record.read()).git ?? null);
    this.#source = new ContainerSource(this.#record, paths.workspace(DEFAULT_WORKSPACE_ID), this.#log);
  }

  get projectId(): string {
    return this.#o.projectId;
  }

  /** Whether the project's container runs (and is not being stopped). */
  get running(): boolean {
    return this.#box?.workload != null && !this.#box.stopping;
  }

  get containerId(): string | null {
    return this.#box?.workload?.id ?? null;
  }

  get sessionIds(): string[] {
    return this.#sessions.ids();
  }

  /** How this project's disk use is bounded here, and the bound (MiB). */
  get disk(): { mode: string; limitMb: number } {
    return { mode: this.#volume.mode, limitMb: this.#volume.limitMb };
  }

  /** Whether a session of this project works in `workspaceId`. */
  usesWorkspace(workspaceId: string): boolean {
    return this.#sessions.usesWorkspace(workspaceId);
  }

  /** Makes the project's volume ready with its disk bound (before its workspaces are made). */
  async prepareVolume(diskMb: number | undefined): Promise<void> {
    if (diskMb !== undefined) {
      await this.#record.update((record) => {
        record.disk_mb = diskMb;
      });
    }
    // Without a container nothing uses the volume: it may be grown to a bigger bound now.
    const idle = !this.#box?.workload;
    await this.#volume.ensure(diskMb ?? (await this.#record.read()).disk_mb, { idle });
  }

  /** Starts the container unless it runs; `ephemeral` marks a project of its own for one v2 session. */
  async ensure(
    spec: ProjectSpec,
    ephemeral = false,
    onProgress?: (message: string) => void,
  ): Promise<EnsuredContainer> {
    await this.setNetwork(spec);
    return this.#serial(() => this.#ensure(spec, ephemeral, onProgress));
  }

  /** The project's network policies (from a spec, or a `project_network` update): applied now, remembered. */
  async setNetwork(spec: Pick<ProjectSpec, "network" | "setup_network">): Promise<void> {
    if (spec.network === undefined && spec.setup_network === undefined) return;
    this.#network.setPolicies(spec);
    await this.#record.update((record) => {
      record.network = {
        network: spec.network ?? record.network?.network ?? this.#network.policy,
        setup_network: spec.setup_network ?? record.network?.setup_network ?? this.#network.setupPolicy,
      };
    });
  }

  /** Stops the container; every session in it ends with `reason`. Idempotent. */
  stop(reason: string): Promise<void> {
    return this.#serial(() => this.#stop(reason));
  }

  /** Stops the container and removes its sockets, its volume and every workspace of it here. */
  remove(): Promise<void> {
    return this.#serial(async () => {
      await this.#stop("the project was removed from this host");
      await this.#volume.release();
      await rm(this.#o.paths.root, { recursive: true, force: true });
      await rm(this.#o.paths.socketDir, { recursive: true, force: true });
      this.#log.info("project removed");
      this.#o.onRemoved(this.#o.projectId);
    });
  }

  /** Recreates the container from the current image; refused while a session runs. */
  refresh(spec: ProjectSpec, onProgress?: (message: string) => void): Promise<{ containerId: string }> {
    return this.#serial(async () => {
      if (this.#sessions.size > 0) {
        throw new HostError(
          "busy",
          `the project has ${this.#sessions.size} running session(s); stop them first`,
        );
      }
      await this.#stop("the project's container is being refreshed");
      // A refresh takes the image its reference names now (a pinned one is let go).
      await this.#source.unpin();
      const { containerId } = await this.#ensure(spec, this.#ephemeral, onProgress);
      return { containerId };
    });
  }

  /**
   * Starts a session's agent in the running container, in `/workspace/<workspaceId>`, as a uid of
   * its own. A CLI agent gets a placeholder model credential, by which the model proxy knows (and
   * meters) the session.
   */
  async startSession(
    sessionId: string,
    workspaceId: string,
    env: Record<string, string>,
    agent: SessionAgent = { runtime: "scripted" },
    git?: SessionGit,
    network: NetworkPolicy[] = [],
    projectSetup?: SetupSpec,
  ): Promise<void> {
    if (this.#sessions.has(sessionId)) return;
    const setup = await this.#source.setup(projectSetup);
    const box = this.#running();
    if (!(await this.workspaces.exists(workspaceId)))
      throw new HostError(
        "not_found",
        `workspace ${workspaceId} does not exist in this project on this host`,
      );
    // A workspace whose setup failed takes no new session until it is fixed.
    if (setup !== undefined) await this.setup.refuseFailed(workspaceId, setup);
    const usage = await this.#diskWatch.check();
    if (usage?.exceeded) throw diskLimitError(usage);
    const identity = await this.#identities.assign(sessionId, await this.workspaces.gidOf(workspaceId));
    await this.#identities.makeHome(sessionId, identity);
    if (git !== undefined)
      await this.#record.update((record) => {
        record.git = git;
      });
    const launch = agentLaunch({
      sessionId,
      workspaceId,
      env,
      agent,
      git,
      identity,
      paths: this.#workloadPaths(),
      separate: this.#o.runtime.separatesSessions,
    });
    const token = randomBytes(32).toString("hex");
    const { session, opened } = this.#sessions.open(
      box,
      { sessionId, token, ...identity },
      workspaceId,
      launch.models,
      { settings: { policies: network, approvals: agent.approvals ?? "auto" }, runtime: agent.runtime },
    );
    await opened;
    // What the repository's devcontainer.json asked that the container was not given: every session hears it.
    const warning = await this.#source.warning();
    if (warning !== undefined)
      session.setupEvent({ type: "environment_warning", workspace_id: workspaceId, message: warning });
    const proxy = session.proxyToken;
    session.start(
      {
        ...launch.start,
        agent: {
          runtime: agent.runtime,
          ...launch.start.agent,
          ...(proxy !== null ? { proxy_token: proxy } : {}),
        },
      },
      // The workspace's setup runs (when it has not yet) before the agent starts; its output is the session's.
      setup === undefined
        ? undefined
        : async () => {
            await this.#runnerReady(box);
            await this.setup.beforeSession(workspaceId, setup, (event) => session.setupEvent(event));
          },
    );
  }

  /** Runs the setup in a workspace now (`workspace setup`), once the container's runner (its proxy) is there. */
  async runSetup(workspaceId: string, projectSetup: SetupSpec): Promise<SetupResult> {
    await this.#runnerReady(this.#running());
    const spec = (await this.#source.setup(projectSetup)) ?? projectSetup;
    return this.setup.run(workspaceId, spec);
  }

  /** Waits for the container's runner: commands reach the network only through its proxy. */
  async #runnerReady(box: Box): Promise<void> {
    if (!(await box.runner.waitConnected(RUNNER_WAIT_MS)))
      throw new HostError(
        "runtime_error",
        `the container's runner did not connect within ${RUNNER_WAIT_MS / 1000} s`,
      );
  }

  /** Stops one session's agent; the container stays. Stopping one this host does not run is not an error. */
  async stopSession(sessionId: string, reason: string): Promise<void> {
    await this.#sessions.get(sessionId)?.session.stop(reason);
  }

  /** Serves a container an earlier host-agent left running, and the sessions its runner reports. */
  async adopt(adopted: AdoptedProject): Promise<void> {
    this.#ephemeral = adopted.ephemeral;
    const remembered = (await this.#record.read()).network;
    if (remembered) this.#network.setPolicies(remembered);
    await this.prepareVolume(undefined);
    const box = await this.#openBox(adopted.runnerToken, adopted.isolation);
    box.workload = adopted.workload;
    this.#watch(box);
    const hello = await box.runner.waitConnected(ADOPT_HELLO_WAIT_MS);
    await box.adopting;
    this.#log.info({ runner: hello, sessions: this.#sessions.size }, "project re-adopted");
  }

  reconnectTunnels(): void {
    this.#sessions.reconnectAll();
  }

  /** Leaves the container running for the next host-agent: closes the tunnels and the sockets. */
  async detach(): Promise<void> {
    this.#diskWatch.stop();
    await this.#sessions.detachAll();
    if (this.#box) await closeBox(this.#box);
  }

  #running(): Box {
    const box = this.#box;
    if (!box?.workload || box.stopping)
      throw new HostError("not_running", "the project's container is not running");
    return box;
  }

  #workloadPaths() {
    const { paths } = this.#o;
    return this.#o.runtime.paths({
      socketDir: paths.socketDir,
      workspacesDir: paths.workspaces,
      homesDir: paths.homes,
    });
  }

  async #ensure(
    spec: ProjectSpec,
    ephemeral: boolean,
    onProgress?: (message: string) => void,
  ): Promise<EnsuredContainer> {
    const current = this.#box;
    if (current?.workload && !current.stopping) return { containerId: current.workload.id, started: false };
    const environment = await this.#source.environment(spec);
    this.#ephemeral = ephemeral;
    const isolation = spec.workspace_isolation;
    await this.prepareVolume(spec.limits.disk_mb);
    await this.workspaces.prepare(isolation);
    await this.#identities.prepareHomes();
    const image = await this.#source.image(spec, environment);
    const runnerToken = randomBytes(32).toString("hex");
    // The sockets listen before the runner starts.
    const box = await this.#openBox(runnerToken, isolation);
    try {
      const launch = (image: string | undefined) =>
        this.#o.runtime.launch({
          projectId: this.#o.projectId,
          runnerToken,
          socketDir: this.#o.paths.socketDir,
          workspacesDir: this.#o.paths.workspaces,
          homesDir: this.#o.paths.homes,
          env: { ...environment?.env, ...spec.env },
          image,
          agent: spec.agent,
          limits: resolveLimits(spec.limits),
          isolation,
          ephemeral,
          tmpMb: this.#o.disk.tmpMb,
          onProgress,
        });
      box.workload = await launch(image.pinned ?? image.ref).catch((error: unknown) => {
        if (
          image.pinned === undefined ||
          !(error instanceof RuntimeError && error.code === "image_not_found")
        )
          throw error;
        this.#log.warn(
          { image: image.ref, pinned: image.pinned },
          "the project's pinned image is gone; using the image its reference names now",
        );
        return launch(image.ref);
      });
    } catch (err) {
      await closeBox(box);
      this.#box = null;
      await rm(this.#o.paths.socketDir, { recursive: true, force: true });
      throw err;
    }
    this.#watch(box);
    await this.#source.made(image, box.workload.image);
    return {
      containerId: box.workload.id,
      started: true,
      ...(environment?.warning !== undefined ? { warnings: [environment.warning] } : {}),
    };
  }

  async #stop(reason: string): Promise<void> {
    const box = this.#box;
    if (!box) return;
    box.stopping = true;
    this.#diskWatch.stop();
    // Each session's object hears why (session_end) before its agent goes with the container.
    await this.#sessions.endAll(reason);
    await box.workload
      ?.stop(reason)
      .catch((err: Error) => this.#log.warn({ err: err.message }, "container stop failed"));
    await closeBox(box);
    await rm(this.#o.paths.socketDir, { recursive: true, force: true });
    if (this.#box === box) this.#box = null;
  }

  /** The sockets and runner link of a new incarnation, listening (the box is current from here on). */
  async #openBox(runnerToken: string, isolation: boolean): Promise<Box> {
    const box = newBox(
      {
        projectId: this.#o.projectId,
        paths: this.#o.paths,
        ownership: this.#o.ownership,
        models: this.#o.models,
        egress: { gate: this.#o.egress, project: this.#network },
        sessions: this.#sessions,
        agentGit: this.#agentGit,
        workspaceRoot: this.#workloadPaths().workspaceRoot,
        logger: this.#log,
      },
      runnerToken,
      isolation,
    );
    this.#box = box;
    await box.sockets.open();
    return box;
  }

  async #sessionClosed(box: SessionBox, sessionId: string): Promise<void> {
    this.#o.onSessionClosed(sessionId);
    await box.sockets.closeSession(sessionId);
    await this.#identities
      .release(sessionId)
      .catch((err: Error) => this.#log.warn({ err: err.message }, "could not release a session's home"));
    // A v2 session's own project goes with it, as its container did.
    if (this.#ephemeral && this.#sessions.size === 0 && this.#box?.stopping === false) void this.remove();
  }

  /** The project reached its disk bound: its agents stop (each session hears why); the workspace stays. */
  async #diskExceeded(usage: VolumeUsage): Promise<void> {
    await this.#sessions.endAll(`disk_limit: ${diskLimitError(usage).message}`, diskLimitNotice(usage));
  }

  #watch(box: Box): void {
    const workload = box.workload;
    if (!workload) return;
    this.#diskWatch.start();
    void workload.exited.then(async (exit) => {
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
