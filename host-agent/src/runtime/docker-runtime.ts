/**
 * Runs each session in its own Docker container: no network (the bind-mounted socket directory
 * is its only channel to the outside), no capabilities, no privilege escalation, bounded memory
 * and pids, a non-root user. The container's main process is the runner; the host-agent never
 * attaches to its stdio, so containers outlive a host-agent restart and are re-adopted by label.
 * Everything goes through the Engine API; no string ever reaches a shell.
 */
import { createHash } from "node:crypto";
import type Dockerode from "dockerode";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import { SESSION_ID_PATTERN } from "../../../protocol/ids.js";
import { AgentEnv } from "../../../protocol/socket.js";
import { dockerStatusCode, errorMessage, isDockerNotFound, RuntimeError } from "./errors.js";
import type { AdoptedWorkload, AgentRuntime, Workload, WorkloadExit, WorkloadLaunch } from "./types.js";

export interface DockerRuntimeOptions {
  docker: Dockerode;
  /** Labels this host's containers, so adoption never touches another host's. */
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
  /** Overrides the image's CMD (tests run other programs in the base image). */
  command?: string[];
  /** The agent the runner starts, overriding the image's OUBLIETTE_AGENT_COMMAND. */
  agentCommand?: string[];
  /** User the runner runs as; default 1000:1000 even if an image forgets its USER. */
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
/** The host directory bind-mounted at /mcp, so a restarted host-agent serves the same socket. */
export const SOCKET_DIR_LABEL = "oubliette.socket-dir";

const WaitResultSchema = z.looseObject({ StatusCode: z.number().int() });

/** AgentRuntime backed by the Docker Engine API. */
export class DockerRuntime implements AgentRuntime {
  readonly kind = "docker" as const;
  readonly survivesRestart = true;
  readonly #options: DockerRuntimeOptions;
  readonly #docker: Dockerode;
  readonly #logger: Logger;

  constructor(options: DockerRuntimeOptions) {
    this.#options = options;
    this.#docker = options.docker;
    this.#logger = options.logger;
  }

  /** Creates and starts the session's container; removes it again if starting fails. */
  async launch(spec: WorkloadLaunch): Promise<Workload> {
    const image = spec.image ?? this.#options.defaultImage;
    const name = containerName(spec.sessionId);
    const container = await this.#create(spec, image, name);
    try {
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw new RuntimeError("runtime_error", `could not start container ${name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    this.#logger.info(
      { session: spec.sessionId, container: container.id.slice(0, 12), image },
      "container started",
    );
    return this.#workload(container);
  }

  async adopt(): Promise<AdoptedWorkload[]> {
    const listed = await this.#docker.listContainers({
      all: true,
      filters: { label: [`${MANAGED_LABEL}=true`, `${HOST_LABEL}=${this.#options.hostId}`] },
    });
    const adopted: AdoptedWorkload[] = [];
    for (const entry of listed) {
      const container = this.#docker.getContainer(entry.Id);
      try {
        const info = await container.inspect();
        const sessionId = info.Config.Labels?.[SESSION_LABEL];
        const socketDir = info.Config.Labels?.[SOCKET_DIR_LABEL];
        const token = envValue(info.Config.Env, AgentEnv.sessionToken);
        if (!sessionId || !SESSION_ID_PATTERN.test(sessionId)) {
          this.#logger.warn(
            { container: entry.Id.slice(0, 12) },
            "a container with this host's label but no valid session id; leaving it alone",
          );
          continue;
        }
        if (info.State.Running && socketDir && token) {
          adopted.push({ sessionId, sessionToken: token, socketDir, workload: this.#workload(container) });
          continue;
        }
        // Dead (or not ours to serve): its session ends by reconciliation; its container goes.
        await container.remove({ force: true });
        this.#logger.info(
          { container: entry.Id.slice(0, 12), session: sessionId },
          "removed a stopped container",
        );
      } catch (error) {
        if (!isDockerNotFound(error)) throw error;
      }
    }
    if (adopted.length > 0) this.#logger.info({ adopted: adopted.length }, "re-adopted running containers");
    return adopted;
  }

  #workload(container: Dockerode.Container): Workload {
    let stopping: Promise<void> | undefined;
    return {
      id: container.id,
      exited: waitForExit(container, this.#logger),
      stop: (reason) => {
        stopping ??= this.#stop(container, reason);
        return stopping;
      },
    };
  }

  async #create(spec: WorkloadLaunch, image: string, name: string): Promise<Dockerode.Container> {
    const env: Record<string, string> = {
      ...spec.env,
      [AgentEnv.socketPath]: CONTAINER_SOCKET,
      [AgentEnv.sessionToken]: spec.sessionToken,
      [AgentEnv.sessionId]: spec.sessionId,
    };
    if (this.#options.agentCommand) env[AgentEnv.agentCommand] = JSON.stringify(this.#options.agentCommand);
    try {
      return await this.#docker.createContainer({
        name,
        Image: image,
        ...(this.#options.command ? { Cmd: this.#options.command } : {}),
        User: this.#options.user ?? "1000:1000",
        Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
        Labels: {
          [SESSION_LABEL]: spec.sessionId,
          [HOST_LABEL]: this.#options.hostId,
          [MANAGED_LABEL]: "true",
          [SOCKET_DIR_LABEL]: spec.socketDir,
        },
        Tty: false,
        StopTimeout: this.#options.stopTimeoutSeconds ?? 10,
        HostConfig: {
          NetworkMode: "none",
          Binds: [`${spec.socketDir}:${CONTAINER_SOCKET_DIR}`],
          CapDrop: ["ALL"],
          SecurityOpt: ["no-new-privileges"],
          PidsLimit: this.#options.pidsLimit ?? 256,
          Memory: this.#options.memoryBytes ?? 1024 * 1024 * 1024,
          // tini as PID 1 reaps zombies and forwards SIGTERM to the runner.
          Init: this.#options.init ?? true,
        },
      });
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
        throw new RuntimeError("runtime_error", `a container named ${name} already exists`, { cause: error });
      }
      throw new RuntimeError("runtime_error", `could not create container ${name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }

  async #stop(container: Dockerode.Container, reason: string): Promise<void> {
    this.#logger.info({ container: container.id.slice(0, 12), reason }, "stopping container");
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

/**
 * Waits for the container to end. A failed wait (the engine restarted, say) is not an exit: the
 * container is inspected and, while it still runs, waited for again.
 */
async function waitForExit(container: Dockerode.Container, logger: Logger): Promise<WorkloadExit> {
  for (;;) {
    try {
      const parsed = WaitResultSchema.safeParse(await container.wait());
      // The engine reports only a status; a signal death shows as 128+n (tini follows that rule).
      return { exitCode: parsed.success ? parsed.data.StatusCode : null, signal: null };
    } catch (error) {
      logger.warn({ err: errorMessage(error) }, "container wait failed; checking the container");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const running = await container
        .inspect()
        .then((info) => info.State.Running)
        .catch(() => false);
      if (!running) return { exitCode: null, signal: null };
    }
  }
}

function envValue(env: string[] | undefined, name: string): string | undefined {
  const prefix = `${name}=`;
  return env?.find((entry) => entry.startsWith(prefix))?.slice(prefix.length);
}

/** A valid, unique container name for a session id (Docker allows [a-zA-Z0-9][a-zA-Z0-9_.-]*). */
export function containerName(sessionId: string): string {
  const safe = sessionId.replace(/[^a-zA-Z0-9_.-]/g, "-").slice(0, 64);
  if (safe === sessionId) return `oub-${safe}`;
  // Sanitising can map two ids to one name; a digest of the original keeps them apart.
  const digest = createHash("sha256").update(sessionId).digest("hex").slice(0, 8);
  return `oub-${safe}-${digest}`;
}
