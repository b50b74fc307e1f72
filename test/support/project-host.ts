/**
 * A host-agent's ProjectManager against a real Docker Engine, driven through the host channel's
 * real request handlers (a linked in-memory JSON-RPC pair stands in for the registry's
 * WebSocket), with sessions' tunnels to a FakeWorker on loopback and scripted droids as agents.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Dockerode from "dockerode";
import { type GitCredential, GitCredentials } from "../../host-agent/src/git/git-credentials.js";
import { loadModelKeys } from "../../host-agent/src/models/model-keys.js";
import { ModelProxy } from "../../host-agent/src/models/model-proxy.js";
import { ProjectManager } from "../../host-agent/src/projects/project-manager.js";
import { DockerRuntime } from "../../host-agent/src/runtime/docker-runtime.js";
import { serveHostRequests } from "../../host-agent/src/tunnel/host-control.js";
import type { Logger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import type { RpcError } from "../../protocol/rpc/errors.js";
import { ensureDockerEngine } from "../../scripts/docker/engine.js";
import { dockerContext } from "./docker-context.js";
import { FakeWorker } from "./fake-worker.js";

/** Two RpcPeers wired to each other: the registry's side and the host's. */
export function linkedPeers(logger: Logger): { registry: RpcPeer; host: RpcPeer } {
  let a: RpcPeer | null = null;
  let b: RpcPeer | null = null;
  const options = { maxMessageBytes: 1024 * 1024, logger };
  const deliver = (to: () => RpcPeer | null) => (text: string) => {
    setImmediate(() => to()?.receive(text));
    return true;
  };
  a = new RpcPeer({ ...options, send: deliver(() => b) });
  b = new RpcPeer({ ...options, send: deliver(() => a) });
  return { registry: a, host: b };
}

export async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ProjectHostOptions {
  logger: Logger;
  hostId: string;
  /** The host's git credentials, by name. */
  credentials?: Record<string, GitCredential>;
}

export class ProjectHost {
  private constructor(
    readonly docker: Dockerode,
    readonly worker: FakeWorker,
    readonly manager: ProjectManager,
    readonly registry: RpcPeer,
    readonly dataDir: string,
    readonly socketDir: string,
  ) {}

  static async start(options: ProjectHostOptions): Promise<ProjectHost> {
    const { logger, hostId } = options;
    const { docker } = await ensureDockerEngine({ install: true, log: () => {} });
    // By id: another checkout on this engine may re-tag oubliette/droid:dev while we run.
    const image = (await docker.getImage(dockerContext().droidImage ?? "oubliette/droid:dev").inspect()).Id;
    const worker = await FakeWorker.start(logger);
    const dataDir = mkdtempSync(join(tmpdir(), "oub-host-data-"));
    const socketDir = mkdtempSync(join(tmpdir(), "oub-host-sock-"));
    const manager = new ProjectManager({
      workerUrl: worker.url,
      hostToken: "test-host-token",
      hostId,
      runtime: new DockerRuntime({ docker, hostId, defaultImage: image, logger, stopTimeoutSeconds: 2 }),
      dataDir,
      socketRoot: socketDir,
      maxSessions: 8,
      maxProjects: 4,
      models: new ModelProxy({ keys: loadModelKeys({}), logger }),
      disk: { mode: "measured", defaultMb: 4096, checkMs: 5_000, minFreeMb: 0, tmpMb: 16 },
      logger,
      timing: { heartbeatMs: 5_000, maxReconnectDelayMs: 1_000 },
      // Tests' remotes are on loopback (test/integration/git-clone.test.ts checks the default).
      git: {
        policy: { allowLocal: true },
        credentials: new GitCredentials(new Map(Object.entries(options.credentials ?? {}))),
      },
    });
    const peers = linkedPeers(logger);
    serveHostRequests(peers.host, manager, logger);
    return new ProjectHost(docker, worker, manager, peers.registry, dataDir, socketDir);
  }

  call<T = Record<string, unknown>>(method: string, params: unknown, timeoutMs = 120_000): Promise<T> {
    return this.registry.request(method, params, { timeoutMs }) as Promise<T>;
  }

  /** The request's error (null when it succeeds). */
  async failure(method: string, params: unknown): Promise<RpcError | null> {
    return this.call(method, params).then(
      () => null,
      (err: RpcError) => err,
    );
  }

  /** Runs steps in a session's scripted droid; resolves with the reports of op `op`. */
  async steps(session: string, seq: number, steps: Record<string, unknown>[], op: string) {
    const id = `steps-${seq}`;
    await this.worker.message(session, seq, JSON.stringify({ id, steps }));
    await until(
      () => this.worker.outputs(session).some((d) => d.op === "done" && d.id === id),
      `${session} ${id}`,
      120_000,
    ).catch((error: Error) => {
      // What the droid did last, and how any earlier run of it ended, say where it stopped.
      const events = this.worker.events(session);
      const ends = events.filter((e) => ["agent_restarted", "error", "droid_status"].includes(e.type));
      const last = JSON.stringify(events.slice(-5)).slice(0, 3000);
      throw new Error(
        `${error.message}; how its runs ended: ${JSON.stringify(ends).slice(0, 3000)}; its last events: ${last}`,
      );
    });
    return this.worker.outputs(session).filter((d) => d.op === op);
  }

  async close(projects: string[]): Promise<void> {
    for (const project_id of projects) await this.call("project_remove", { project_id }).catch(() => {});
    await this.worker.close();
    for (const dir of [this.dataDir, this.socketDir]) rmSync(dir, { recursive: true, force: true });
  }
}
