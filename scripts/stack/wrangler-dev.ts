/**
 * Starts the Worker under `wrangler dev` (workerd via Miniflare) as a child process and waits for
 * its "Ready on" line. Used by `npm start`, the end-to-end tests and the benchmark.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { stopChild } from "./stop-child.js";

const require = createRequire(import.meta.url);

export interface WranglerDevOptions {
  repoRoot: string;
  /** 0 picks a free port. */
  port?: number;
  /** Where Durable Object state is kept between runs. */
  persistTo: string;
  /** Worker variables (`--var NAME:VALUE`); secrets for tests only, `.dev.vars` otherwise. */
  vars?: Record<string, string>;
  /** File that receives wrangler's output (the Worker's JSON logs among it). */
  logFile: string;
  readyTimeoutMs?: number;
}

export interface WranglerDev {
  url: string;
  process: ChildProcess;
  logFile: string;
  stop(): Promise<void>;
}

/** Starts `wrangler dev` and resolves once it serves requests. */
export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  await mkdir(dirname(options.logFile), { recursive: true });
  const wrangler = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");
  const args = [
    wrangler,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(options.port ?? 0),
    "--inspector-port",
    "0",
    "--persist-to",
    options.persistTo,
    "--show-interactive-dev-session=false",
  ];
  for (const [name, value] of Object.entries(options.vars ?? {})) args.push("--var", `${name}:${value}`);
  const child = spawn(process.execPath, args, {
    cwd: options.repoRoot,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1", FORCE_COLOR: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = createWriteStream(options.logFile, { flags: "a" });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const url = await new Promise<string>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `wrangler dev was not ready within ${options.readyTimeoutMs ?? 60_000} ms; see ${options.logFile}`,
          ),
        ),
      options.readyTimeoutMs ?? 60_000,
    );
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4096);
      const match = /Ready on (http:\/\/[0-9.]+:\d+)/.exec(seen);
      if (match?.[1]) {
        clearTimeout(timer);
        child.stdout?.off("data", onData);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`wrangler dev exited with code ${code}; see ${options.logFile}`));
    });
  });
  return { url, process: child, logFile: options.logFile, stop: () => stopChild(child, 5_000) };
}
