/**
 * A whole local Oubliette: the Worker on its local server (workerd) and host-agents as child processes,
 * with fresh tokens. Shared by `npm start`, the end-to-end tests and the benchmark.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { PACKAGE_CACHE } from "../../host-agent/src/images/package-cache.js";
import { bundles, repoRoot } from "../build.js";
import { type HostAgent, type HostAgentOptions, startHostAgent } from "./host-agent-process.js";
import { unmountUnder } from "./mounts.js";
import { removeHostContainers } from "./remove-containers.js";
import { newToken, sha256Hex } from "./tokens.js";
import { startWranglerDev, type WranglerDev, type WranglerDevOptions } from "./wrangler-dev.js";

export interface LocalStackOptions {
  /** State directory; a fresh temporary one (removed on stop) when absent. */
  dir?: string;
  port?: number;
  adminToken?: string;
  hostToken?: string;
  /** Extra caller tokens by id (known to the Worker only by their hashes), scope admin. */
  extraTokens?: string[];
  vars?: Record<string, string>;
  /** More environment for wrangler and workerd (e.g. NODE_EXTRA_CA_CERTS, a CA its fetches trust). */
  wranglerEnv?: Record<string, string>;
  /** Aborting stops what has started and rejects the start. */
  signal?: AbortSignal;
  /** Environment every host-agent of the stack gets (a host's own `extraEnv` goes over it). */
  hostEnv?: Record<string, string>;
}

export interface HostOptions {
  runtime: "docker" | "process" | "auto";
  image?: string;
  /** Let the host-agent reach the Worker through another URL (e.g. a proxy that can cut it). */
  workerUrl?: string;
  hostId?: string;
  heartbeatMs?: number;
  reconnectMaxMs?: number;
  /** Most sessions the host runs at once (default: the host-agent's). */
  maxSessions?: number;
  /** More environment for the host-agent (settings that have an environment variable). */
  extraEnv?: Record<string, string>;
  /** Aborting stops the host-agent and rejects the start. */
  signal?: AbortSignal;
  /** A host token of its own (from `host enrol`) instead of the stack's configured one. */
  hostToken?: string;
}

export class LocalStack {
  readonly hosts: HostAgent[] = [];
  #hostCount = 0;
  /** How each host-agent was started, to start it again the same way. */
  readonly #hostOptions = new WeakMap<HostAgent, HostAgentOptions>();

  #worker: WranglerDev;
  readonly #workerOptions: WranglerDevOptions;
  /** Every host-agent's environment (LocalStackOptions.hostEnv). */
  #hostEnv: Record<string, string> = {};

  private constructor(
    worker: WranglerDev,
    workerOptions: WranglerDevOptions,
    readonly dir: string,
    readonly adminToken: string,
    readonly hostToken: string,
    readonly extraTokens: Record<string, string>,
    private readonly temporary: boolean,
  ) {
    this.#worker = worker;
    this.#workerOptions = workerOptions;
  }

  /** The Worker's local server (a new one after `restartWorker`). */
  get worker(): WranglerDev {
    return this.#worker;
  }

  static async start(options: LocalStackOptions = {}): Promise<LocalStack> {
    const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "oubliette-")));
    await mkdir(dir, { recursive: true });
    const adminToken = options.adminToken ?? newToken();
    const hostToken = options.hostToken ?? newToken();
    const extraTokens = Object.fromEntries((options.extraTokens ?? []).map((id) => [id, newToken()]));
    const staticTokens = Object.entries(extraTokens).map(([id, token]) => ({
      id,
      sha256: sha256Hex(token),
      scopes: ["admin"],
    }));
    const workerOptions: WranglerDevOptions = {
      repoRoot,
      port: options.port,
      persistTo: join(dir, "state"),
      logFile: join(dir, "worker.log"),
      envFile: join(dir, "worker.env"),
      vars: {
        OUBLIETTE_ADMIN_TOKEN: adminToken,
        OUBLIETTE_HOST_TOKEN: hostToken,
        ...(staticTokens.length ? { OUBLIETTE_STATIC_TOKENS: JSON.stringify(staticTokens) } : {}),
        ...options.vars,
      },
      ...(options.wranglerEnv ? { env: options.wranglerEnv } : {}),
    };
    const worker = await startWranglerDev({ ...workerOptions, signal: options.signal }).catch(
      async (err: unknown) => {
        if (options.dir === undefined && !process.env.OUBLIETTE_KEEP_STATE)
          await rm(dir, { recursive: true, force: true });
        throw err;
      },
    );
    const port = Number(new URL(worker.url).port);
    const stack = new LocalStack(
      worker,
      { ...workerOptions, port },
      dir,
      adminToken,
      hostToken,
      extraTokens,
      options.dir === undefined,
    );
    stack.#hostEnv = options.hostEnv ?? {};
    return stack;
  }

  get url(): string {
    return this.worker.url;
  }

  get mcpUrl(): URL {
    return new URL("/mcp", this.worker.url);
  }

  /** Starts a host-agent connected to this Worker (or to `workerUrl`). */
  async addHost(options: HostOptions): Promise<HostAgent> {
    this.#hostCount += 1;
    // Unique per stack: a host-agent removes its host id's leftover containers at start-up, so two
    // stacks sharing one Docker Engine must never share a host id.
    const hostId = options.hostId ?? `${basename(this.dir)}-host-${this.#hostCount}`;
    const hostOptions: HostAgentOptions = {
      bundle: bundles.hostAgent,
      workerUrl: options.workerUrl ?? this.worker.url,
      hostToken: options.hostToken ?? this.hostToken,
      hostId,
      runtime: options.runtime,
      image: options.image,
      socketDir: join(this.dir, `sockets-${this.#hostCount}`),
      logFile: join(this.dir, `${hostId}.log`),
      heartbeatMs: options.heartbeatMs,
      reconnectMaxMs: options.reconnectMaxMs,
      extraEnv: {
        // Project workspaces stay with the stack's state (npm start keeps them across starts).
        OUBLIETTE_DATA_DIR: join(this.dir, `data-${this.#hostCount}`),
        // The agent CLIs the checkout's images are built from (for projects in images not ours).
        OUBLIETTE_CLI_CACHE: PACKAGE_CACHE,
        ...this.#hostEnv,
        ...options.extraEnv,
        ...(options.maxSessions === undefined ? {} : { OUBLIETTE_MAX_SESSIONS: String(options.maxSessions) }),
      },
    };
    const host = await startHostAgent({ ...hostOptions, signal: options.signal });
    this.#hostOptions.set(host, hostOptions);
    this.hosts.push(host);
    return host;
  }

  /**
   * Starts `host` again (same host id, socket directory and log file) after it exited, so that
   * the new agent finds its sessions' containers; it replaces `host` in `hosts`.
   */
  async restartHost(host: HostAgent, signal?: AbortSignal): Promise<HostAgent> {
    const hostOptions = this.#hostOptions.get(host);
    if (!hostOptions) throw new Error(`host-agent ${host.hostId} was not started by this stack`);
    await host.stop();
    const next = await startHostAgent({ ...hostOptions, signal });
    this.#hostOptions.set(next, hostOptions);
    const index = this.hosts.indexOf(host);
    if (index >= 0) this.hosts[index] = next;
    else this.hosts.push(next);
    return next;
  }

  /** Stops the Worker and starts it again on the same port with the same state (a Worker restart). */
  async restartWorker(): Promise<WranglerDev> {
    await this.#worker.stop();
    this.#worker = await startWranglerDev(this.#workerOptions);
    return this.#worker;
  }

  async stop(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.stop()));
    await this.#worker.stop();
    if (this.temporary && !process.env.OUBLIETTE_KEEP_STATE) {
      // Its host-agents left their containers running for a next start this stack will not have.
      await removeHostContainers(this.hosts.map((h) => h.hostId)).catch(() => 0);
      await unmountUnder(this.dir);
      await rm(this.dir, { recursive: true, force: true });
    }
  }
}
