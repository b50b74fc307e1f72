/**
 * Runs each project's runner as a plain child process of the host-agent. There is NO isolation:
 * the droids share this user's files, network and processes. For development on machines
 * without Docker. Workloads do not survive the host-agent: the runner watches its stdin (a pipe
 * from us) and ends its agents when we are gone, and sessions end cleanly when we stop.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Logger } from "../../../lib/log.js";
import { runnerSocketPath } from "../../../protocol/container-layout.js";
import { AgentEnv } from "../../../protocol/socket.js";
import { errorMessage, RuntimeError } from "./errors.js";
import { LineRing } from "./line-ring.js";
import { processExec } from "./process-exec.js";
import type {
  AdoptedProject,
  AgentRuntime,
  ProjectLaunch,
  Workload,
  WorkloadExit,
  WorkloadPaths,
} from "./types.js";

export interface ProcessRuntimeOptions {
  /** The runner: program and arguments, run without a shell. */
  runnerCommand: string[];
  /** The agent the runner starts. */
  agentCommand: string[];
  logger: Logger;
  /** Delay from SIGTERM to SIGKILL on stop; default 10 s. */
  killAfterMs?: number;
}

/** Only these leak from the host-agent into workloads: its own secrets (tokens) must not. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  return env;
}

/** AgentRuntime that spawns local child processes (dev only, no isolation). */
export class ProcessRuntime implements AgentRuntime {
  readonly kind = "process" as const;
  readonly survivesRestart = false;
  /** Agents are this user's processes: nothing can keep one workspace from another. */
  readonly canIsolate = false;
  readonly separatesSessions = false;
  readonly #options: ProcessRuntimeOptions;
  readonly #logger: Logger;

  constructor(options: ProcessRuntimeOptions) {
    if (options.runnerCommand.length === 0 || options.agentCommand.length === 0) {
      throw new RuntimeError("runtime_error", "ProcessRuntime needs a runner and an agent command");
    }
    this.#options = options;
    this.#logger = options.logger;
    this.#logger.warn(
      { agent: options.agentCommand },
      "process runtime: droids run as local processes with NO isolation (development only)",
    );
  }

  paths(launch: Pick<ProjectLaunch, "socketDir" | "workspacesDir" | "homesDir">): WorkloadPaths {
    return { socketDir: launch.socketDir, workspaceRoot: launch.workspacesDir, homesRoot: launch.homesDir };
  }

  /** Spawns the runner for one project and resolves once it is running. */
  async launch(spec: ProjectLaunch): Promise<Workload> {
    const [program, ...args] = this.#options.runnerCommand;
    if (program === undefined)
      throw new RuntimeError("runtime_error", "ProcessRuntime needs a runner command");
    const env: Record<string, string> = {
      ...spec.env,
      ...baseEnv(),
      [AgentEnv.socketPath]: runnerSocketPath(spec.socketDir),
      [AgentEnv.runnerToken]: spec.runnerToken,
      [AgentEnv.projectId]: spec.projectId,
      [AgentEnv.agentCommand]: JSON.stringify(this.#options.agentCommand),
      [AgentEnv.exitWithParent]: "1",
    };
    // stdin is a pipe the runner watches (it ends with us); its output is kept for `logs` and
    // joins ours on stderr.
    const child = spawn(program, args, { cwd: spec.workspacesDir, env, stdio: ["pipe", "pipe", "pipe"] });
    const ring = new LineRing();
    child.stdout?.on("data", (chunk: Buffer) => ring.push("stdout", chunk));
    child.stderr?.on("data", (chunk: Buffer) => {
      ring.push("stderr", chunk);
      process.stderr.write(chunk);
    });
    const exited = new Promise<WorkloadExit>((resolve) => {
      child.once("exit", (exitCode, signal) => resolve({ exitCode, signal }));
    });
    await spawned(child, program);
    const pid = child.pid ?? 0;
    const logger = this.#logger.child({ project: spec.projectId, pid });
    // A late 'error' (a failed kill) or an EPIPE on stdin must not crash the host-agent.
    child.on("error", (error) => logger.warn({ err: errorMessage(error) }, "runner process error"));
    child.stdin?.on("error", () => {});
    logger.info("runner process started");
    let stopping: Promise<void> | undefined;
    return {
      id: `pid:${pid}`,
      exited,
      stop: (reason) => {
        stopping ??= this.#stop(child, exited, reason, logger);
        return stopping;
      },
      exec: (params, options = {}) =>
        processExec(
          params,
          spec.workspacesDir,
          { ...baseEnv(), ...options.env },
          options.signal,
          options.stdout,
          options.output,
        ),
      logs: async (params) => ({ lines: ring.read(params.tail, params.since), truncated: false }),
    };
  }

  /** Nothing survives a process-runtime host-agent. */
  async adopt(): Promise<AdoptedProject[]> {
    return [];
  }

  async #stop(child: ChildProcess, exited: Promise<WorkloadExit>, reason: string, logger: Logger) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    logger.info({ reason }, "stopping runner process");
    child.kill("SIGTERM");
    // Unref'd: pending escalation must not keep the host-agent alive on its own.
    const kill = setTimeout(() => {
      logger.warn("runner ignored SIGTERM; sending SIGKILL");
      child.kill("SIGKILL");
    }, this.#options.killAfterMs ?? 10_000).unref();
    try {
      await exited;
    } finally {
      clearTimeout(kill);
    }
  }
}

/** Resolves when the child is running; rejects with a RuntimeError when it could not be spawned. */
function spawned(child: ChildProcess, program: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      child.off("spawn", onSpawn);
      reject(
        new RuntimeError("runtime_error", `could not run ${program}: ${error.message}`, { cause: error }),
      );
    };
    const onSpawn = () => {
      child.off("error", onError);
      resolve();
    };
    child.once("error", onError);
    child.once("spawn", onSpawn);
  });
}
