/**
 * Starts the Worker under `wrangler dev` (workerd via Miniflare) as a child process and waits for
 * its "Ready on" line. Used by `npm start`, the end-to-end tests and the benchmark.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
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
  // The port is chosen here and readiness is a /healthz answer: no parsing of wrangler's output.
  const port = options.port || (await freePort());
  const args = [
    wrangler,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
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
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(url, child, options);
  return { url, process: child, logFile: options.logFile, stop: () => stopChild(child, 5_000) };
}

/** A TCP port nobody listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("could not pick a free port");
  return address.port;
}

/** Polls /healthz until the Worker answers; fails if wrangler exits or the timeout passes. */
async function waitUntilServing(
  url: string,
  child: ChildProcess,
  options: WranglerDevOptions,
): Promise<void> {
  const timeoutMs = options.readyTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let exited: number | null | undefined;
  child.once("exit", (code) => {
    exited = code;
  });
  while (Date.now() < deadline) {
    if (exited !== undefined)
      throw new Error(`wrangler dev exited with code ${exited}; see ${options.logFile}`);
    const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })
      .then((res) => res.ok)
      .catch(() => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`wrangler dev was not ready within ${timeoutMs} ms; see ${options.logFile}`);
}
