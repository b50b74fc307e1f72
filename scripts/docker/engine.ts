/**
 * Makes a Docker Engine reachable for tests and `npm start`: use the one that answers, or (as
 * root on Debian) install docker.io and start dockerd ourselves. dockerd is only ever started with
 * this machine's network flags (no bridge, no iptables), and only the dockerd we started is stopped.
 * A failure is thrown as DockerUnavailableError, never swallowed: a run that needs Docker must not
 * pass without it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import Dockerode from "dockerode";
import { DockerUnavailableError } from "../../host-agent/src/images/errors.js";
import {
  DEFAULT_DOCKER_SOCKET,
  dockerSocketPath,
  pingDocker,
} from "../../host-agent/src/runtime/docker-ping.js";
import { runApt } from "./apt.js";

export { type DockerUnavailableCode, DockerUnavailableError } from "../../host-agent/src/images/errors.js";
export { DEFAULT_DOCKER_SOCKET } from "../../host-agent/src/runtime/docker-ping.js";

/** The only way dockerd may be started on these machines. */
export const DOCKERD_ARGS = ["--bridge=none", "--iptables=false", "--ip6tables=false"] as const;

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const STOP_GRACE_MS = 15_000;
const POLL_INTERVAL_MS = 250;

export interface EnsureDockerEngineOptions {
  /** Install docker.io with apt-get when dockerd is missing (root on Debian only). */
  install?: boolean;
  /** Progress lines for a human; defaults to stderr. */
  log?: (line: string) => void;
  /** How long to wait for a dockerd we started to answer. */
  startTimeoutMs?: number;
  /** Where dockerd.log goes; defaults to `<repo>/.oubliette`. */
  stateDir?: string;
}

export interface DockerEngine {
  docker: Dockerode;
  socketPath: string;
  /** PID of the dockerd this call started, or null when the engine was already running. */
  startedPid: number | null;
  /** Stops dockerd if (and only if) this call started it. */
  stop(): Promise<void>;
}

/** Resolves the engine's Unix socket from DOCKER_HOST (unix:// only) or the default path. */
export function resolveDockerSocket(env: NodeJS.ProcessEnv = process.env): string {
  const socketPath = dockerSocketPath(env);
  if (socketPath !== null) return socketPath;
  throw new DockerUnavailableError(
    "unsupported_docker_host",
    `DOCKER_HOST=${env.DOCKER_HOST} is not supported: only unix:// sockets are (containers bind-mount host paths)`,
  );
}

/** True when a Docker Engine answers a ping on the socket within ~1 s. */
export async function isDockerReachable(socketPath: string = resolveDockerSocket()): Promise<boolean> {
  return pingDocker(socketPath, 1_000);
}

/** Returns a reachable Docker Engine, installing and starting one if allowed; throws DockerUnavailableError otherwise. */
export async function ensureDockerEngine(options: EnsureDockerEngineOptions = {}): Promise<DockerEngine> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[docker] ${line}\n`));
  const socketPath = resolveDockerSocket();
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const notOurs = (): DockerEngine => ({
    docker: new Dockerode({ socketPath }),
    socketPath,
    startedPid: null,
    stop: async () => {},
  });

  if (await isDockerReachable(socketPath)) {
    log(`engine answers on ${socketPath}`);
    return notOurs();
  }
  if (socketPath !== DEFAULT_DOCKER_SOCKET) {
    // We only start dockerd on its default socket; a custom DOCKER_HOST is someone else's engine.
    throw new DockerUnavailableError(
      "unreachable",
      `DOCKER_HOST points at ${socketPath} but no Docker Engine answers there; start it, or unset DOCKER_HOST`,
    );
  }
  const runningPid = liveDockerdPid();
  if (runningPid !== null) {
    // Another dockerd is starting (or stuck); starting a second one would fail on its pid file.
    log(`dockerd pid ${runningPid} is running but not answering yet; waiting up to ${timeoutMs / 1000} s`);
    if (await waitForPing(socketPath, timeoutMs, () => false)) return notOurs();
    throw new DockerUnavailableError(
      "unreachable",
      `dockerd pid ${runningPid} is running but does not answer on ${socketPath}; check or restart it`,
    );
  }

  requireRoot();
  const dockerd = findDockerd() ?? (await installDocker(options, log));
  const stateDir = options.stateDir ?? join(repoRoot, ".oubliette");
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, "dockerd.log");
  const child = startDockerd(dockerd, logFile);
  const pid = child.pid;
  if (pid === undefined) {
    throw new DockerUnavailableError("dockerd_exited", `could not spawn ${dockerd}\n${tail(logFile)}`);
  }
  log(`started ${dockerd} ${DOCKERD_ARGS.join(" ")} (pid ${pid}); log: ${logFile}`);

  let exited = false;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
  });
  const startedAt = Date.now();
  if (await waitForPing(socketPath, timeoutMs, () => exited)) {
    log(`engine ready after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    return {
      docker: new Dockerode({ socketPath }),
      socketPath,
      startedPid: pid,
      stop: once(() => stopDockerd(child, exitedPromise, log)),
    };
  }
  if (exited) {
    // Another process may have won a race to start dockerd; use its engine if it answers.
    if (await isDockerReachable(socketPath)) return notOurs();
    throw new DockerUnavailableError(
      "dockerd_exited",
      `dockerd exited with code ${child.exitCode} before answering. Tail of ${logFile}:\n${tail(logFile)}`,
    );
  }
  await stopDockerd(child, exitedPromise, log);
  throw new DockerUnavailableError(
    "start_timeout",
    `dockerd did not answer on ${socketPath} within ${timeoutMs / 1000} s. Tail of ${logFile}:\n${tail(logFile)}`,
  );
}

async function waitForPing(socketPath: string, timeoutMs: number, gaveUp: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !gaveUp()) {
    if (await isDockerReachable(socketPath)) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  return false;
}

function requireRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new DockerUnavailableError(
      "not_root",
      "no Docker Engine answers and this process is not root, so it cannot start dockerd. " +
        `Start Docker yourself (as root: dockerd ${DOCKERD_ARGS.join(" ")}) or run as root.`,
    );
  }
}

function findDockerd(): string | null {
  // Root's PATH usually has the sbin dirs, but CI shells sometimes do not.
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    const candidate = join(dir, "dockerd");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

async function installDocker(
  options: EnsureDockerEngineOptions,
  log: (line: string) => void,
): Promise<string> {
  if (!options.install) {
    throw new DockerUnavailableError(
      "install_disabled",
      "no Docker Engine answers and dockerd is not installed (install docker.io, or pass install: true)",
    );
  }
  if (!existsSync("/etc/debian_version")) {
    throw new DockerUnavailableError(
      "not_debian",
      "no Docker Engine answers and dockerd is not installed; automatic install only works on Debian (apt-get)",
    );
  }
  log("dockerd not found: installing docker.io with apt-get (this takes a minute or two)");
  await runApt(["update"], log);
  await runApt(["install", "-y", "docker.io"], log);
  const dockerd = findDockerd();
  if (dockerd === null) {
    throw new DockerUnavailableError(
      "apt_failed",
      "apt-get installed docker.io but dockerd is still not found",
    );
  }
  return dockerd;
}

function startDockerd(dockerd: string, logFile: string): ChildProcess {
  const fd = openSync(logFile, "a");
  try {
    // Its own process group: a ^C aimed at the test run must not kill the engine under the
    // containers being cleaned up; stop() ends it.
    const child = spawn(dockerd, [...DOCKERD_ARGS], { detached: true, stdio: ["ignore", fd, fd] });
    child.on("error", () => {
      // Reported through the exit/pid checks; an unhandled 'error' would crash the caller.
    });
    child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

async function stopDockerd(child: ChildProcess, exited: Promise<void>, log: (line: string) => void) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  log(`stopping dockerd pid ${child.pid}`);
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), STOP_GRACE_MS);
  });
  const stopped = await Promise.race([exited.then(() => true), graceOver]);
  clearTimeout(timer);
  if (!stopped) {
    log(`dockerd pid ${child.pid} ignored SIGTERM for ${STOP_GRACE_MS / 1000} s; sending SIGKILL`);
    child.kill("SIGKILL");
    await exited;
  }
  log("dockerd stopped");
}

/** PID from dockerd's pid file when that process is alive. */
function liveDockerdPid(): number | null {
  try {
    const pid = Number.parseInt(readFileSync("/var/run/docker.pid", "utf8").trim(), 10);
    if (!Number.isInteger(pid) || pid <= 0) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no dockerd log)";
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | undefined;
  return () => {
    pending ??= fn();
    return pending;
  };
}
