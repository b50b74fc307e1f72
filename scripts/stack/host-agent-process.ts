/**
 * Starts a host-agent (the built bundle) as a child process and waits until it has registered
 * with the Worker. The host token goes in the environment (OUBLIETTE_HOST_TOKEN), never in argv,
 * which every local user can read. The agent leads its own process group, so that droids it runs
 * as local processes stop with it.
 */
import type { ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { HOST_AGENT_NODE_FLAGS, HOST_AGENT_PROCESS_ENV } from "../../host-agent/src/node-flags.js";
import { LogLines } from "./log-lines.js";
import { describeExit, type ExitInfo, exitOf, spawnGroup, stopGroup } from "./process-group.js";

/** Longer than the host-agent's own 20 s limit for stopping its sessions, so it can finish. */
const STOP_GRACE_MS = 25_000;

export interface HostAgentOptions {
  bundle: string;
  /** The working directory it runs in (default: this process's). */
  cwd?: string;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: "docker" | "process" | "auto";
  image?: string;
  socketDir: string;
  logFile: string;
  /** Tunnel heartbeat and reconnect-backoff cap (tests shorten them). */
  heartbeatMs?: number;
  reconnectMaxMs?: number;
  extraEnv?: Record<string, string>;
  readyTimeoutMs?: number;
  /** Aborting stops the agent and rejects the start. */
  signal?: AbortSignal;
}

export interface HostAgent {
  process: ChildProcess;
  hostId: string;
  logFile: string;
  /** Settles when the agent exits, for whatever reason. */
  exited: Promise<ExitInfo>;
  /** Resolves when a log line matching `pattern` appears (lines seen so far included). */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

export { HOST_AGENT_NODE_FLAGS };

/** Starts a host-agent and resolves once it is registered with the Worker. */
export async function startHostAgent(options: HostAgentOptions): Promise<HostAgent> {
  options.signal?.throwIfAborted();
  const args = [
    ...HOST_AGENT_NODE_FLAGS,
    options.bundle,
    "--worker-url",
    options.workerUrl,
    "--host-id",
    options.hostId,
    "--runtime",
    options.runtime,
    "--socket-dir",
    options.socketDir,
  ];
  if (options.image) args.push("--image", options.image);
  if (options.heartbeatMs) args.push("--heartbeat-ms", String(options.heartbeatMs));
  if (options.reconnectMaxMs) args.push("--reconnect-max-ms", String(options.reconnectMaxMs));
  const child = spawnGroup(process.execPath, args, {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: {
      ...process.env,
      ...HOST_AGENT_PROCESS_ENV,
      ...options.extraEnv,
      OUBLIETTE_HOST_TOKEN: options.hostToken,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = createWriteStream(options.logFile, { flags: "a" });
  const lines = new LogLines(`host-agent ${options.hostId}`, options.logFile);
  child.stdout?.on("data", (chunk: Buffer) => {
    log.write(chunk);
    lines.feed(chunk);
  });
  child.stderr?.pipe(log);
  const exited = exitOf(child);
  const stop = () => stopGroup(child, STOP_GRACE_MS);
  const exitedEarly = exited.then((exit) => {
    throw new Error(
      `host-agent ${options.hostId} exited (${describeExit(exit)}) before it registered; see ${options.logFile}`,
    );
  });
  // Ends the wait for the registration line however the start ends (no timer left behind).
  const waiting = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, waiting.signal]) : waiting.signal;
  try {
    await Promise.race([
      lines.waitFor(/registered with the Worker/, options.readyTimeoutMs ?? 30_000, signal),
      exitedEarly,
    ]);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    waiting.abort();
  }
  return {
    process: child,
    hostId: options.hostId,
    logFile: options.logFile,
    exited,
    waitForLog: (pattern, timeoutMs) => lines.waitFor(pattern, timeoutMs),
    stop,
  };
}
