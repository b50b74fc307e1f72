/**
 * Runs each droid as a plain child process of the host-agent. There is NO isolation: the droid
 * shares this user's files, network and processes. For development on machines without Docker.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { errorMessage, RuntimeError } from "./errors.js";
import type { AgentExit, AgentLaunch, AgentProcess, AgentRuntime } from "./types.js";

export interface ProcessRuntimeOptions {
  /** Program and arguments, run without a shell. */
  command: string[];
  logger: Logger;
  cwd?: string;
  /** Delay from stdin end to SIGTERM on stop; default 2 s. */
  termAfterMs?: number;
  /** Delay from SIGTERM to SIGKILL on stop; default 5 s. */
  killAfterMs?: number;
}

/** AgentRuntime that spawns local child processes (dev only, no isolation). */
export class ProcessRuntime implements AgentRuntime {
  readonly kind = "process" as const;
  readonly #options: ProcessRuntimeOptions;
  readonly #logger: Logger;

  constructor(options: ProcessRuntimeOptions) {
    if (options.command.length === 0)
      throw new RuntimeError("runtime_error", "ProcessRuntime needs a command");
    this.#options = options;
    this.#logger = options.logger;
    this.#logger.warn(
      { command: options.command },
      "process runtime: droids run as local processes with NO isolation (development only)",
    );
  }

  /** Spawns the command for one session and resolves once it is running. */
  async launch(spec: AgentLaunch): Promise<AgentProcess> {
    const [program, ...args] = this.#options.command;
    if (program === undefined) throw new RuntimeError("runtime_error", "ProcessRuntime needs a command");
    const env: Record<string, string> = { ...spec.env, OUBLIETTE_SOCKET: join(spec.socketDir, "relay.sock") };
    // Only PATH and HOME leak from the host-agent: its own secrets (tokens) must not.
    if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
    if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
    const child = spawn(program, args, { cwd: this.#options.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    const exited = new Promise<AgentExit>((resolve) => {
      child.once("exit", (exitCode, signal) => resolve({ exitCode, signal }));
    });
    await spawned(child, program);
    const pid = child.pid ?? 0;
    const logger = this.#logger.child({ session: spec.sessionId, pid });
    // A late 'error' (a failed kill) or an EPIPE on stdin must not crash the host-agent;
    // the process's end is reported through `exited`.
    child.on("error", (error) => logger.warn({ err: errorMessage(error) }, "child process error"));
    child.stdin.on("error", (error) => logger.debug({ err: errorMessage(error) }, "stdin write failed"));
    logger.info({ command: this.#options.command }, "process started");
    let stopping: Promise<void> | undefined;
    return {
      id: `pid:${pid}`,
      stdin: child.stdin,
      stdout: child.stdout,
      stderr: child.stderr,
      exited,
      stop: (reason) => {
        stopping ??= this.#stop(child, exited, reason, logger);
        return stopping;
      },
    };
  }

  /** Nothing to clean up: a local process dies with its host-agent's session handling. */
  async removeOrphans(): Promise<number> {
    return 0;
  }

  async #stop(child: ChildProcess, exited: Promise<AgentExit>, reason: string, logger: Logger) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    logger.info({ reason }, "stopping process");
    child.stdin?.end();
    const termAfterMs = this.#options.termAfterMs ?? 2_000;
    const killAfterMs = this.#options.killAfterMs ?? 5_000;
    // Unref'd: pending escalation must not keep the host-agent alive on its own.
    const term = setTimeout(() => child.kill("SIGTERM"), termAfterMs).unref();
    const kill = setTimeout(() => {
      logger.warn("process ignored SIGTERM; sending SIGKILL");
      child.kill("SIGKILL");
    }, termAfterMs + killAfterMs).unref();
    try {
      await exited;
    } finally {
      clearTimeout(term);
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
