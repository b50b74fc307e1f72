/**
 * A whole local Oubliette: the Worker under `wrangler dev` and host-agents as child processes,
 * with fresh tokens. Shared by `npm start`, the end-to-end tests and the benchmark.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { bundles, repoRoot } from "../build.js";
import { type HostAgent, startHostAgent } from "./host-agent-process.js";
import { newToken, sha256Hex } from "./tokens.js";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev.js";

export interface LocalStackOptions {
  /** State directory; a fresh temporary one (removed on stop) when absent. */
  dir?: string;
  port?: number;
  adminToken?: string;
  hostToken?: string;
  /** Extra caller tokens by id (known to the Worker only by their hashes), scope admin. */
  extraTokens?: string[];
  vars?: Record<string, string>;
}

export interface HostOptions {
  runtime: "docker" | "process" | "auto";
  image?: string;
  /** Let the host-agent reach the Worker through another URL (e.g. a proxy that can cut it). */
  workerUrl?: string;
  hostId?: string;
  heartbeatMs?: number;
  reconnectMaxMs?: number;
}

export class LocalStack {
  readonly hosts: HostAgent[] = [];
  #hostCount = 0;

  private constructor(
    readonly worker: WranglerDev,
    readonly dir: string,
    readonly adminToken: string,
    readonly hostToken: string,
    readonly extraTokens: Record<string, string>,
    private readonly temporary: boolean,
  ) {}

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
    const worker = await startWranglerDev({
      repoRoot,
      port: options.port,
      persistTo: join(dir, "state"),
      logFile: join(dir, "worker.log"),
      vars: {
        OUBLIETTE_ADMIN_TOKEN: adminToken,
        OUBLIETTE_HOST_TOKEN: hostToken,
        ...(staticTokens.length ? { OUBLIETTE_STATIC_TOKENS: JSON.stringify(staticTokens) } : {}),
        ...options.vars,
      },
    });
    return new LocalStack(worker, dir, adminToken, hostToken, extraTokens, options.dir === undefined);
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
    const host = await startHostAgent({
      bundle: bundles.hostAgent,
      workerUrl: options.workerUrl ?? this.worker.url,
      hostToken: this.hostToken,
      hostId,
      runtime: options.runtime,
      image: options.image,
      socketDir: join(this.dir, `sockets-${this.#hostCount}`),
      logFile: join(this.dir, `${hostId}.log`),
      heartbeatMs: options.heartbeatMs,
      reconnectMaxMs: options.reconnectMaxMs,
    });
    this.hosts.push(host);
    return host;
  }

  async stop(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.stop()));
    await this.worker.stop();
    if (this.temporary && !process.env.OUBLIETTE_KEEP_STATE)
      await rm(this.dir, { recursive: true, force: true });
  }
}
