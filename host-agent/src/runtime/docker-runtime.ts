/**
 * Runs each droid in its own Docker container: no network (the bind-mounted relay socket is its
 * only channel to the outside), no capabilities, no privilege escalation, bounded memory and pids,
 * a non-root user. Everything goes through the Engine API; no string ever reaches a shell.
 */
import { createHash } from "node:crypto";
import type Dockerode from "dockerode";
import type { Logger } from "../../../lib/log.js";
import { attachContainer } from "./docker-attach.js";
import { dockerStatusCode, errorMessage, isDockerNotFound, RuntimeError } from "./errors.js";
import type { AgentLaunch, AgentProcess, AgentRuntime } from "./types.js";

export interface DockerRuntimeOptions {
  docker: Dockerode;
  /** Labels this host's containers, so removeOrphans never touches another host's. */
  hostId: string;
  /** Image used when a launch names none. */
  defaultImage: string;
  logger: Logger;
  /** Memory limit per container; default 1 GiB. */
  memoryBytes?: number;
  /** Process/thread limit per container; default 256. */
  pidsLimit?: number;
  /** Grace between SIGTERM and SIGKILL on stop; default 10 s. */
  stopTimeoutSeconds?: number;
  /** Overrides the image's CMD (tests run `node -e` in the base image). */
  command?: string[];
  /** User the agent runs as; default 1000:1000 even if an image forgets its USER. */
  user?: string;
  /** Run the engine's init (docker-init/tini) as PID 1; default true. Turn off for engines without it. */
  init?: boolean;
}

/** Where the session's socketDir appears inside the container. */
export const CONTAINER_SOCKET_DIR = "/mcp";
export const CONTAINER_SOCKET = `${CONTAINER_SOCKET_DIR}/relay.sock`;
export const MANAGED_LABEL = "oubliette.managed";
export const HOST_LABEL = "oubliette.host";
export const SESSION_LABEL = "oubliette.session";

/** AgentRuntime backed by the Docker Engine API. */
export class DockerRuntime implements AgentRuntime {
  readonly kind = "docker" as const;
  readonly #options: DockerRuntimeOptions;
  readonly #docker: Dockerode;
  readonly #logger: Logger;

  constructor(options: DockerRuntimeOptions) {
    this.#options = options;
    this.#docker = options.docker;
    this.#logger = options.logger;
  }

  /** Creates, attaches to and starts the session's container; removes it again if any step fails. */
  async launch(spec: AgentLaunch): Promise<AgentProcess> {
    const image = spec.image ?? this.#options.defaultImage;
    const name = containerName(spec.sessionId);
    const container = await this.#create(spec, image, name);
    try {
      // Attach before start, so not a byte of early output is lost.
      const logger = this.#logger.child({ session: spec.sessionId, container: container.id.slice(0, 12) });
      const attached = await attachContainer(this.#docker, container, logger);
      try {
        await container.start();
      } catch (error) {
        attached.destroy();
        throw error;
      }
      const agent = attached.toAgentProcess({
        id: container.id,
        stop: (reason) => this.#stop(container, reason),
      });
      logger.info({ image, name }, "container started");
      return agent;
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw new RuntimeError("runtime_error", `could not start container ${name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }

  /** Removes every container this host's earlier runs left behind; returns how many. */
  async removeOrphans(): Promise<number> {
    const orphans = await this.#docker.listContainers({
      all: true,
      filters: { label: [`${MANAGED_LABEL}=true`, `${HOST_LABEL}=${this.#options.hostId}`] },
    });
    let removed = 0;
    for (const orphan of orphans) {
      try {
        await this.#docker.getContainer(orphan.Id).remove({ force: true });
        removed += 1;
      } catch (error) {
        if (!isDockerNotFound(error)) throw error;
      }
    }
    if (removed > 0) this.#logger.info({ removed }, "removed orphan containers");
    return removed;
  }

  async #create(spec: AgentLaunch, image: string, name: string): Promise<Dockerode.Container> {
    const env = { ...spec.env, OUBLIETTE_SOCKET: CONTAINER_SOCKET };
    try {
      const container = await this.#docker.createContainer({
        name,
        Image: image,
        ...(this.#options.command ? { Cmd: this.#options.command } : {}),
        User: this.#options.user ?? "1000:1000",
        Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
        Labels: {
          [SESSION_LABEL]: spec.sessionId,
          [HOST_LABEL]: this.#options.hostId,
          [MANAGED_LABEL]: "true",
        },
        OpenStdin: true,
        // StdinOnce: our stdin EOF closes the droid's stdin. With false, the engine instead keeps
        // the droid's stdin open and closes our stdout/stderr, losing its last output.
        StdinOnce: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        HostConfig: {
          NetworkMode: "none",
          Binds: [`${spec.socketDir}:${CONTAINER_SOCKET_DIR}`],
          CapDrop: ["ALL"],
          SecurityOpt: ["no-new-privileges"],
          PidsLimit: this.#options.pidsLimit ?? 256,
          Memory: this.#options.memoryBytes ?? 1024 * 1024 * 1024,
          // tini as PID 1 reaps zombies and forwards SIGTERM to the droid.
          Init: this.#options.init ?? true,
        },
      });
      return container;
    } catch (error) {
      const status = dockerStatusCode(error);
      if (status === 404) {
        throw new RuntimeError(
          "image_not_found",
          `image ${image} does not exist on this host's Docker Engine; build it (npm run build, then the ` +
            "droid image) or name an existing image",
          { cause: error },
        );
      }
      if (status === 409) {
        throw new RuntimeError(
          "runtime_error",
          `a container named ${name} already exists (left by an earlier run?); removeOrphans() clears it`,
          { cause: error },
        );
      }
      throw new RuntimeError("runtime_error", `could not create container ${name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }

  async #stop(container: Dockerode.Container, reason: string): Promise<void> {
    this.#logger.info({ container: container.id, reason }, "stopping container");
    try {
      await container.stop({ t: this.#options.stopTimeoutSeconds ?? 10 });
    } catch (error) {
      // 304: already stopped; 404: already gone. Both are the state we want.
      const status = dockerStatusCode(error);
      if (status !== 304 && status !== 404) {
        this.#logger.warn({ container: container.id, err: errorMessage(error) }, "container stop failed");
      }
    }
    try {
      await container.remove({ force: true });
    } catch (error) {
      // 409: a removal is already in progress.
      const status = dockerStatusCode(error);
      if (status !== 404 && status !== 409) throw error;
    }
  }
}

/** A valid, unique container name for a session id (Docker allows [a-zA-Z0-9][a-zA-Z0-9_.-]*). */
export function containerName(sessionId: string): string {
  const safe = sessionId.replace(/[^a-zA-Z0-9_.-]/g, "-").slice(0, 64);
  if (safe === sessionId) return `oub-${safe}`;
  // Sanitising can map two ids to one name; a digest of the original keeps them apart.
  const digest = createHash("sha256").update(sessionId).digest("hex").slice(0, 8);
  return `oub-${safe}-${digest}`;
}
