/**
 * Picks the runtime droids run in. "auto" prefers Docker (isolation) and falls back to local
 * processes only when no engine answers, saying so; "docker" never falls back.
 */
import Dockerode from "dockerode";
import type { Logger } from "../../../lib/log.js";
import type { RunnerKits } from "../kit/runner-kits.js";
import { dockerSocketPath, pingDocker } from "./docker-ping.js";
import { DockerRuntime, type DockerRuntimeOptions } from "./docker-runtime.js";
import { RuntimeError } from "./errors.js";
import { ProcessRuntime } from "./process-runtime.js";
import type { AgentRuntime } from "./types.js";

export type RuntimePreference = "auto" | "docker" | "process";

export interface SelectRuntimeOptions {
  prefer: RuntimePreference;
  hostId: string;
  logger: Logger;
  /** Image for sessions that name none (Docker). */
  dockerImage: string;
  /** The runner program (process runtime): the container-client bundle in runner mode. */
  runnerCommand: string[];
  /** The agent the runner starts in Docker; the image's own unless this is set. */
  agentCommand?: string[] | undefined;
  /** The agent the runner starts under the process runtime. */
  processAgentCommand?: string[] | undefined;
  /** What images that are not ours run with (Docker). */
  kits?: RunnerKits | undefined;
  /** Engine socket; defaults to DOCKER_HOST (unix:// only) or /var/run/docker.sock. */
  dockerSocket?: string;
  /** Limits and overrides passed through to DockerRuntime. */
  docker?: Pick<
    DockerRuntimeOptions,
    "stopTimeoutSeconds" | "command" | "init" | "agentCommand" | "canIsolate" | "imagePull"
  >;
  pingTimeoutMs?: number;
}

/** Returns the runtime to use; throws RuntimeError("docker_unavailable") when Docker is required but unreachable. */
export async function selectRuntime(options: SelectRuntimeOptions): Promise<AgentRuntime> {
  const { logger } = options;
  if (options.prefer === "process") return processRuntime(options);

  const socketPath = options.dockerSocket ?? dockerSocketPath();
  const reachable = socketPath !== null && (await pingDocker(socketPath, options.pingTimeoutMs ?? 1_000));
  if (reachable) {
    logger.info({ socketPath }, "runtime: docker");
    return new DockerRuntime({
      ...(options.agentCommand ? { agentCommand: options.agentCommand } : {}),
      ...options.docker,
      ...(options.kits ? { kits: options.kits } : {}),
      docker: new Dockerode({ socketPath }),
      hostId: options.hostId,
      defaultImage: options.dockerImage,
      logger,
    });
  }
  const why =
    socketPath === null
      ? `DOCKER_HOST=${process.env.DOCKER_HOST} is not a unix:// socket`
      : `no Docker Engine answers on ${socketPath}`;
  if (options.prefer === "docker") {
    throw new RuntimeError(
      "docker_unavailable",
      `the docker runtime was requested but ${why}; start Docker (dockerd) or choose the process runtime`,
    );
  }
  logger.warn({ reason: why }, "runtime: falling back to local processes because Docker is unavailable");
  return processRuntime(options);
}

function processRuntime(options: SelectRuntimeOptions): ProcessRuntime {
  options.logger.info("runtime: process");
  if (!options.processAgentCommand) {
    throw new RuntimeError(
      "runtime_error",
      "the process runtime needs an agent command (--agent-command, or `npm run build` for the scripted droid)",
    );
  }
  return new ProcessRuntime({
    runnerCommand: options.runnerCommand,
    agentCommand: options.processAgentCommand,
    logger: options.logger,
  });
}
