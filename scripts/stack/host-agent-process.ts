/**
 * Starts a host-agent (the built bundle) as a child process and waits until it has registered
 * with the Worker.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { stopChild } from "./stop-child.js";

export interface HostAgentOptions {
  bundle: string;
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
}

export interface HostAgent {
  process: ChildProcess;
  hostId: string;
  logFile: string;
  /** Resolves when a log line matching `pattern` appears (lines seen so far included). */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a host-agent and resolves once it is registered with the Worker. */
export async function startHostAgent(options: HostAgentOptions): Promise<HostAgent> {
  const args = [
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
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...options.extraEnv, OUBLIETTE_HOST_TOKEN: options.hostToken },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = createWriteStream(options.logFile, { flags: "a" });
  const lines: string[] = [];
  const waiters = new Set<{ pattern: RegExp; resolve(line: string): void }>();
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    log.write(chunk);
    const parts = (partial + chunk.toString()).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      if (lines.length < 50_000) lines.push(line);
      for (const w of waiters) {
        if (w.pattern.test(line)) {
          waiters.delete(w);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr?.pipe(log);
  const waitForLog = (pattern: RegExp, timeoutMs = 30_000) => {
    const seen = lines.find((l) => pattern.test(l));
    if (seen) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      const waiter = {
        pattern,
        resolve: (line: string) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(
          new Error(
            `host-agent ${options.hostId}: no log line matching ${pattern} within ${timeoutMs} ms; see ${options.logFile}`,
          ),
        );
      }, timeoutMs);
      waiters.add(waiter);
    });
  };
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) =>
      reject(new Error(`host-agent exited with code ${code}; see ${options.logFile}`)),
    ),
  );
  exited.catch(() => {});
  await Promise.race([waitForLog(/registered with the Worker/, options.readyTimeoutMs ?? 30_000), exited]);
  return {
    process: child,
    hostId: options.hostId,
    logFile: options.logFile,
    waitForLog,
    stop: () => stopChild(child, 10_000),
  };
}
