/**
 * A local Oubliette stack for end-to-end tests: the Worker under `wrangler dev` and host-agents
 * as real processes, each test file with its own state directory, tokens and ports.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundles, repoRoot } from "../../scripts/build.js";
import { type HostAgent, startHostAgent } from "../../scripts/stack/host-agent-process.js";
import { newToken, sha256Hex } from "../../scripts/stack/tokens.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/stack/wrangler-dev.js";

export interface StackOptions {
  /** Extra Worker variables, e.g. short grace and keep-alive periods. */
  vars?: Record<string, string>;
}

export interface HostOptions {
  runtime: "docker" | "process";
  image?: string;
  /** Let the host-agent reach the Worker through another URL (a proxy that can cut the tunnel). */
  workerUrl?: string;
  hostId?: string;
  heartbeatMs?: number;
}

export class TestStack {
  readonly hosts: HostAgent[] = [];
  #hostCount = 0;

  private constructor(
    readonly worker: WranglerDev,
    readonly dir: string,
    readonly adminToken: string,
    /** A second caller token (not the owner of the admin's sessions). */
    readonly otherToken: string,
    readonly hostToken: string,
  ) {}

  /** Starts the Worker with fresh tokens and state. */
  static async start(options: StackOptions = {}): Promise<TestStack> {
    const dir = await mkdtemp(join(tmpdir(), "oub-e2e-"));
    const adminToken = newToken();
    const otherToken = newToken();
    const hostToken = newToken();
    const worker = await startWranglerDev({
      repoRoot,
      persistTo: join(dir, "state"),
      logFile: join(dir, "worker.log"),
      vars: {
        OUBLIETTE_ADMIN_TOKEN: adminToken,
        OUBLIETTE_HOST_TOKEN: hostToken,
        OUBLIETTE_STATIC_TOKENS: JSON.stringify([
          { id: "other", sha256: sha256Hex(otherToken), scopes: ["admin"] },
        ]),
        ...options.vars,
      },
    });
    return new TestStack(worker, dir, adminToken, otherToken, hostToken);
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
    const hostId = options.hostId ?? `test-host-${this.#hostCount}`;
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
    });
    this.hosts.push(host);
    return host;
  }

  async stop(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.stop()));
    await this.worker.stop();
    if (!process.env.OUBLIETTE_KEEP_TEST_STATE) await rm(this.dir, { recursive: true, force: true });
  }
}
