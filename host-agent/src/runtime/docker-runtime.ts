/**
 * Runs each project in its own Docker container: no network (the bind-mounted socket directory
 * is its only channel to the outside), a read-only root filesystem (writes go to the project's
 * volume or a small in-memory /tmp), no privilege escalation, bounded memory, CPU and pids. The
 * runner is root holding only SETUID, SETGID and KILL (no DAC_OVERRIDE, no PTRACE): it starts
 * each session's agent as that session's own uid and stops it, and no agent can read the
 * runner's memory or environment. A user's command (`container exec`) runs as the image's
 * `droid` user in every workspace's group, through `setpriv`. The container's main process is the
 * runner; the host-agent never attaches to its stdio, so containers outlive a host-agent restart
 * and are re-adopted by label. Everything goes through the Engine API; no string ever reaches a
 * shell.
 */
import { createHash } from "node:crypto";
import type Dockerode from "dockerode";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import { ContainerPaths, KitPaths, runnerSocketPath } from "../../../protocol/container-layout.js";
import { PROJECT_ID_PATTERN } from "../../../protocol/ids.js";
import { AgentEnv } from "../../../protocol/socket.js";
import type { ContainerExecParams } from "../../../protocol/tunnel-projects.js";
import type { RunnerKits } from "../kit/runner-kits.js";
import { dockerExec } from "./docker-exec.js";
import { dockerLogs } from "./docker-logs.js";
import { dockerStatusCode, errorMessage, isDockerNotFound, RuntimeError } from "./errors.js";
import { foreignImageCheck, kitContainerConfig } from "./foreign-image.js";
import type { ImagePullPolicy } from "./image-pull.js";
import type {
  AdoptedProject,
  AgentRuntime,
  ExecIdentity,
  ProjectLaunch,
  Workload,
  WorkloadExit,
  WorkloadPaths,
} from "./types.js";

export interface DockerRuntimeOptions {
  docker: Dockerode;
  /** Labels this host's containers, so adoption never touches another host's. */
  hostId: string;
  /** Image used when a launch names none. */
  defaultImage: string;
  logger: Logger;
  /** Grace between SIGTERM and SIGKILL on stop; default 10 s. */
  stopTimeoutSeconds?: number;
  /** Overrides the image's CMD (tests run other programs in the base image). */
  command?: string[];
  /** The agent the runner starts, overriding the image's OUBLIETTE_AGENT_COMMAND. */
  agentCommand?: string[];
  /** Run the engine's init (docker-init/tini) as PID 1; default true. Turn off for engines without it. */
  init?: boolean;
  /** Whether this host may isolate workspaces (it must own their directories: root); default: uid 0. */
  canIsolate?: boolean;
  /**
   * What the host mounts into an image that is not one of ours (one without our `oubliette.image`
   * label) so the runner runs there; without it such images are refused.
   */
  kits?: RunnerKits;
  /** Whether a project's image the engine lacks is pulled (default: never). */
  imagePull?: ImagePullPolicy;
}

export const MANAGED_LABEL = "oubliette.managed";
export const HOST_LABEL = "oubliette.host";
export const PROJECT_LABEL = "oubliette.project";
/** The host directory bind-mounted at /mcp, so a restarted host-agent serves the same socket. */
export const SOCKET_DIR_LABEL = "oubliette.socket-dir";
export const ISOLATION_LABEL = "oubliette.workspace-isolation";
/** A project of its own for one session of a protocol-2 registry. */
export const EPHEMERAL_LABEL = "oubliette.ephemeral";
/**
 * The container's layout (sockets, homes, identities). A container of another layout is not
 * re-adopted: its runner would look for sockets this host-agent no longer serves.
 */
export const LAYOUT_LABEL = "oubliette.layout";
export const CONTAINER_LAYOUT = "2";
/** The runner kit a container of an image that is not ours runs with (its id). */
export const KIT_LABEL = "oubliette.kit";
/** The runner's capabilities: start agents as their uids, and stop them. Nothing else. */
const RUNNER_CAPABILITIES = ["SETUID", "SETGID", "KILL"];

const WaitResultSchema = z.looseObject({ StatusCode: z.number().int() });

/** AgentRuntime backed by the Docker Engine API. */
export class DockerRuntime implements AgentRuntime {
  readonly kind = "docker" as const;
  readonly survivesRestart = true;
  readonly separatesSessions = true;
  readonly canIsolate: boolean;
  readonly #options: DockerRuntimeOptions;
  readonly #docker: Dockerode;
  readonly #logger: Logger;

  constructor(options: DockerRuntimeOptions) {
    this.#options = options;
    this.#docker = options.docker;
    this.#logger = options.logger;
    this.canIsolate = options.canIsolate ?? process.getuid?.() === 0;
  }

  paths(): WorkloadPaths {
    return {
      socketDir: ContainerPaths.socketDir,
      workspaceRoot: ContainerPaths.workspaces,
      homesRoot: ContainerPaths.homes,
    };
  }

  /** Creates and starts the project's container; removes it again if starting fails. */
  async launch(spec: ProjectLaunch): Promise<Workload> {
    const image = spec.image ?? this.#options.defaultImage;
    const name = containerName(this.#options.hostId, spec.projectId);
    const { container, kitted, imageId } = await this.#create(spec, image, name);
    try {
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw new RuntimeError("runtime_error", `could not start container ${name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    this.#logger.info(
      { project: spec.projectId, container: container.id.slice(0, 12), image, isolation: spec.isolation },
      "container started",
    );
    return { ...this.#workload(container, kitted), image: { id: imageId, ours: !kitted } };
  }

  async adopt(): Promise<AdoptedProject[]> {
    const listed = await this.#docker.listContainers({
      all: true,
      filters: { label: [`${MANAGED_LABEL}=true`, `${HOST_LABEL}=${this.#options.hostId}`] },
    });
    const adopted: AdoptedProject[] = [];
    for (const entry of listed) {
      const container = this.#docker.getContainer(entry.Id);
      try {
        const info = await container.inspect();
        const labels = info.Config.Labels ?? {};
        const projectId = labels[PROJECT_LABEL];
        const socketDir = labels[SOCKET_DIR_LABEL];
        const token = envValue(info.Config.Env, AgentEnv.runnerToken);
        if (!projectId || !PROJECT_ID_PATTERN.test(projectId)) {
          this.#logger.warn(
            { container: entry.Id.slice(0, 12) },
            "a container with this host's label but no valid project id; leaving it alone",
          );
          continue;
        }
        if (labels[LAYOUT_LABEL] !== CONTAINER_LAYOUT) {
          await container.remove({ force: true });
          this.#logger.warn(
            { container: entry.Id.slice(0, 12), project: projectId },
            "removed a container an older host-agent made (another socket layout); its sessions end",
          );
          continue;
        }
        if (info.State.Running && socketDir && token) {
          adopted.push({
            projectId,
            runnerToken: token,
            socketDir,
            isolation: labels[ISOLATION_LABEL] === "true",
            ephemeral: labels[EPHEMERAL_LABEL] === "true",
            workload: this.#workload(container, labels[KIT_LABEL] !== undefined),
          });
          continue;
        }
        // Dead (or not ours to serve): its sessions end by reconciliation; its container goes.
        await container.remove({ force: true });
        this.#logger.info(
          { container: entry.Id.slice(0, 12), project: projectId },
          "removed a stopped container",
        );
      } catch (error) {
        if (!isDockerNotFound(error)) throw error;
      }
    }
    if (adopted.length > 0) this.#logger.info({ adopted: adopted.length }, "re-adopted running containers");
    return adopted;
  }

  /** `kitted`: the container runs with the runner kit (its programs are the kit's, not the image's). */
  #workload(container: Dockerode.Container, kitted: boolean): Workload {
    let stopping: Promise<void> | undefined;
    return {
      id: container.id,
      exited: waitForExit(container, this.#logger),
      stop: (reason) => {
        stopping ??= this.#stop(container, reason);
        return stopping;
      },
      exec: (params, options = {}) =>
        dockerExec(
          this.#docker,
          container,
          asIdentity(params, options.identity, kitted ? KitPaths.setpriv : "setpriv"),
          this.#logger,
          options,
        ),
      logs: (params) => dockerLogs(container, params),
    };
  }

  async #create(
    spec: ProjectLaunch,
    image: string,
    name: string,
  ): Promise<{ container: Dockerode.Container; kitted: boolean; imageId: string }> {
    const check = await foreignImageCheck(this.#docker, image, {
      policy: this.#options.imagePull ?? "never",
      log: (line) => {
        this.#logger.info({ image }, line);
        spec.onProgress?.(line);
      },
    });
    let kit: ReturnType<typeof kitContainerConfig> | null = null;
    if (check.foreign) {
      if (this.#options.kits === undefined) {
        throw new RuntimeError(
          "unsupported",
          `image ${image} is not one of this host's images and this host-agent carries no runner kit for it ` +
            "(run `npm run build`, or use the droid or an agent image)",
        );
      }
      const mounts = await this.#options.kits.mounts(spec.agent).catch((error: unknown) => {
        throw new RuntimeError(
          "runtime_error",
          `could not prepare the runner for image ${image}: ${errorMessage(error)}`,
          { cause: error },
        );
      });
      kit = kitContainerConfig(mounts, check.path);
    }
    const env: Record<string, string> = {
      ...spec.env,
      [AgentEnv.socketPath]: runnerSocketPath(ContainerPaths.socketDir),
      [AgentEnv.runnerToken]: spec.runnerToken,
      [AgentEnv.projectId]: spec.projectId,
      [AgentEnv.separateSessions]: "1",
    };
    if (kit !== null) Object.assign(env, kit.env);
    if (this.#options.agentCommand) env[AgentEnv.agentCommand] = JSON.stringify(this.#options.agentCommand);
    const command = this.#options.command ?? kit?.cmd;
    try {
      const container = await this.#docker.createContainer({
        name,
        Image: image,
        // An image of ours starts the runner itself; any other image's entrypoint is not ours to run.
        ...(kit !== null ? { Entrypoint: [""] } : {}),
        ...(command ? { Cmd: command } : {}),
        // Root, to become each session's uid; nothing else a root normally has.
        User: "0:0",
        WorkingDir: ContainerPaths.workspaces,
        Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
        Labels: {
          [PROJECT_LABEL]: spec.projectId,
          [HOST_LABEL]: this.#options.hostId,
          [MANAGED_LABEL]: "true",
          [SOCKET_DIR_LABEL]: spec.socketDir,
          [ISOLATION_LABEL]: String(spec.isolation),
          [EPHEMERAL_LABEL]: String(spec.ephemeral),
          [LAYOUT_LABEL]: CONTAINER_LAYOUT,
          ...(kit !== null ? { [KIT_LABEL]: kit.id } : {}),
        },
        Tty: false,
        StopTimeout: this.#options.stopTimeoutSeconds ?? 10,
        HostConfig: {
          NetworkMode: "none",
          // The namespace is loopback alone, where a closed connection's TIME_WAIT guards against
          // nothing: none is kept, so the socket table the runner reads to learn who made each
          // proxy connection (container-client's socket-owner.ts) holds the live connections only
          // (an install's thousand closed ones made each lookup ~1.5 ms), and ports come back at once.
          Sysctls: { "net.ipv4.tcp_max_tw_buckets": "0" },
          Binds: [
            `${spec.socketDir}:${ContainerPaths.socketDir}`,
            `${spec.workspacesDir}:${ContainerPaths.workspaces}`,
            `${spec.homesDir}:${ContainerPaths.homes}`,
            ...(kit?.binds ?? []),
          ],
          CapDrop: ["ALL"],
          CapAdd: RUNNER_CAPABILITIES,
          SecurityOpt: ["no-new-privileges"],
          // Nothing grows the image's layer: writes go to the project's volume (bounded) or /tmp.
          ReadonlyRootfs: true,
          Tmpfs: { "/tmp": `rw,nosuid,nodev,size=${spec.tmpMb}m,mode=1777` },
          PidsLimit: spec.limits.pids,
          Memory: spec.limits.memoryMb * 1024 * 1024,
          NanoCpus: Math.round(spec.limits.cpus * 1e9),
          // tini as PID 1 reaps zombies and forwards SIGTERM to the runner.
          Init: this.#options.init ?? true,
        },
      });
      return { container, kitted: kit !== null, imageId: check.id };
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
      const status = dockerStatusCode(error);
      if (status === 404) return;
      if (status !== 409) throw error;
      // 409: another removal is in progress; the container is gone only when that one is done.
      await waitUntilGone(container);
    }
  }
}

/** How long a removal someone else started may take before ours gives up waiting for it. */
const REMOVAL_WAIT_MS = 30_000;

/** Waits (bounded) until the engine no longer knows the container, so a listing right after omits it. */
async function waitUntilGone(container: Dockerode.Container): Promise<void> {
  const until = Date.now() + REMOVAL_WAIT_MS;
  while (Date.now() < until) {
    try {
      await container.inspect();
    } catch (error) {
      if (dockerStatusCode(error) === 404) return;
      throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new RuntimeError("runtime_error", `container ${container.id} is still being removed`);
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

/**
 * A user's command as the exec identity: the exec starts as the container's root and `setpriv`
 * becomes the identity (uid, gid, every workspace's group, no capabilities) before it runs the
 * command, so the command can read neither the runner's nor any session's secrets.
 */
function asIdentity(
  params: ContainerExecParams,
  identity: ExecIdentity | undefined,
  setpriv: string,
): ContainerExecParams {
  if (!identity) return params;
  const groups = [...new Set([identity.gid, ...identity.groups])].join(",");
  return {
    ...params,
    command: [
      setpriv,
      `--reuid=${identity.uid}`,
      `--regid=${identity.gid}`,
      `--groups=${groups}`,
      "--inh-caps=-all",
      "--",
      ...params.command,
    ],
  };
}

function envValue(env: string[] | undefined, name: string): string | undefined {
  const prefix = `${name}=`;
  return env?.find((entry) => entry.startsWith(prefix))?.slice(prefix.length);
}

/**
 * A valid container name (Docker allows [a-zA-Z0-9][a-zA-Z0-9_.-]*) for a project's container on
 * a host: the host id is part of it, since hosts may share an engine and a project that moved
 * from one to another has a container on each until the first one's sessions end.
 */
export function containerName(hostId: string, projectId: string): string {
  const raw = `${hostId}-${projectId}`;
  const safe = raw.replace(/[^a-zA-Z0-9_.-]/g, "-").slice(0, 200);
  if (safe === raw) return `oub-${safe}`;
  // Sanitising (or cutting) can map two to one name; a digest of the original keeps them apart.
  const digest = createHash("sha256").update(raw).digest("hex").slice(0, 8);
  return `oub-${safe}-${digest}`;
}
