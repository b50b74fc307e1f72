/**
 * Starts the Worker's local server (wrangler's deploy bundle in Miniflare's workerd; scripts/
 * stack/wrangler-dev-main.ts says how it differs from the `wrangler dev` CLI) as a child process
 * and waits until it serves requests. Used by `npm start`, the end-to-end tests and the benchmark.
 *
 * - The Worker's variables (tokens among them) go through a 0600 env file, never argv.
 * - Each start gets a random instance nonce (OUBLIETTE_INSTANCE_ID) and is ready only when
 *   /healthz answers with it, so a port another server already serves is never taken for ours.
 * - The server runs in its own process group and is stopped as a group, workerd included.
 * - A free port is picked by binding it and letting it go, so another process may take it before
 *   workerd binds it: a server that exits saying its address is in use is started again on
 *   another port (twice at most). A port the caller named is never changed.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { writeEnvFile } from "./env-file.js";
import { freePort, isPortFree, PortInUseError } from "./port.js";
import { describeExit, type ExitInfo, exitOf, spawnGroup, stopGroup } from "./process-group.js";
import { waitForInstance } from "./readiness.js";

export interface WranglerDevOptions {
  repoRoot: string;
  /** 0 or absent picks a free port; a port in use is refused (PortInUseError). */
  port?: number;
  /** Where Durable Object state is kept between runs. */
  persistTo: string;
  /** Worker variables and secrets, written to `envFile` (mode 0600). */
  vars?: Record<string, string>;
  /** Where the variables are written for the server; removed on stop. */
  envFile: string;
  /** File that receives the server's output (the Worker's JSON logs among it). */
  logFile: string;
  readyTimeoutMs?: number;
  /** More environment for the server and workerd. */
  env?: Record<string, string>;
  /** Aborting stops the server and rejects the start. */
  signal?: AbortSignal;
}

export interface WranglerDev {
  url: string;
  process: ChildProcess;
  /** The nonce the Worker answers /healthz with. */
  instanceId: string;
  logFile: string;
  /** Settles when the server exits, for whatever reason. */
  exited: Promise<ExitInfo>;
  stop(): Promise<void>;
}

/** workerd may ignore SIGTERM; it gets SIGKILL this long after. */
const STOP_GRACE_MS = 5_000;

/** Starts of a server that lost its picked port to another process before a start is given up. */
const PORT_ATTEMPTS = 3;

/** Starts the Worker's local server and resolves once this instance serves requests. */
export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  options.signal?.throwIfAborted();
  await mkdir(dirname(options.logFile), { recursive: true });
  if (options.port) {
    if (!(await isPortFree(options.port))) throw new PortInUseError(options.port);
    return startOn(options, options.port);
  }
  for (let attempt = 1; ; attempt += 1) {
    const logOffset = await stat(options.logFile).then(
      (s) => s.size,
      () => 0,
    );
    try {
      return await startOn(options, await freePort());
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !(await lostItsPort(options.logFile, logOffset))) throw err;
    }
  }
}

/** Whether the server's output since `offset` says its port was taken (by another process, first). */
export async function lostItsPort(logFile: string, offset: number): Promise<boolean> {
  const text = await readFile(logFile).then(
    (b) => b.subarray(offset).toString("utf8"),
    () => "",
  );
  return /EADDRINUSE|address already in use/i.test(text);
}

async function startOn(options: WranglerDevOptions, port: number): Promise<WranglerDev> {
  const instanceId = randomBytes(16).toString("hex");
  await writeEnvFile(options.envFile, { ...options.vars, OUBLIETTE_INSTANCE_ID: instanceId });
  const args = [
    "--import",
    "tsx",
    join(options.repoRoot, "scripts/stack/wrangler-dev-main.ts"),
    "--config",
    join(options.repoRoot, "wrangler.toml"),
    "--port",
    String(port),
    "--persist-to",
    options.persistTo,
    "--env-file",
    options.envFile,
    // Rebuilt at every start, next to the state.
    "--cache-dir",
    join(options.repoRoot, ".oubliette", "cache", "worker"),
  ];
  const child = spawnGroup(process.execPath, args, {
    cwd: options.repoRoot,
    env: {
      ...process.env,
      ...options.env,
      WRANGLER_SEND_METRICS: "false",
      CI: "1",
      NO_COLOR: "1",
      FORCE_COLOR: "0",
      // Bindings come from the env file alone: never the whole environment, never .dev.vars.
      CLOUDFLARE_INCLUDE_PROCESS_ENV: "false",
      CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = createWriteStream(options.logFile, { flags: "a" });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = exitOf(child);
  let exit: ExitInfo | undefined;
  void exited.then((info) => {
    exit = info;
  });
  const stop = async () => {
    await stopGroup(child, STOP_GRACE_MS);
    await rm(options.envFile, { force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForInstance(url, instanceId, {
      timeoutMs: options.readyTimeoutMs ?? 60_000,
      signal: options.signal,
      logFile: options.logFile,
      failed: () =>
        exit &&
        new Error(
          `the Worker's local server exited (${describeExit(exit)}) before it was ready; see ${options.logFile}`,
        ),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, process: child, instanceId, logFile: options.logFile, exited, stop };
}
