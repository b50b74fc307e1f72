/**
 * `host-agent doctor`: checks what a host needs before the host-agent can serve it (the Docker
 * Engine, the Worker and this host's token, its directories, its secret files) and says what to
 * do about each failure. Every check is bounded in time, so doctor never hangs, and none prints
 * a secret. Everything it talks to can be injected (tests point it at loopback servers).
 */
import Dockerode from "dockerode";
import { dockerSocketPath } from "../runtime/docker-ping.js";
import { checkDataDir, checkSocketDir } from "./doctor-checks/directories.js";
import { checkDockerEngine, checkDockerNetwork } from "./doctor-checks/docker.js";
import { type DoctorFinding, errorText, seconds, timed } from "./doctor-checks/finding.js";
import { checkHostToken } from "./doctor-checks/host-token.js";
import { checkNodeVersion } from "./doctor-checks/node-version.js";
import { checkGitCredentials, checkModelKeys } from "./doctor-checks/secret-files.js";
import { checkWorkerHealth } from "./doctor-checks/worker-health.js";

export type { DoctorFinding } from "./doctor-checks/finding.js";

export const DEFAULT_DOCTOR_TIMEOUT_MS = 5_000;

export interface DoctorInput {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  socketDir: string;
  dataDir: string;
  /** The model keys file (--model-keys), if any; keys in the environment count too. */
  modelKeys?: string | undefined;
  /** The git credentials file (--git-credentials), if any. */
  gitCredentials?: string | undefined;
  /** The engine client, or how to make it; default: the host-agent's own (DOCKER_HOST or the default socket). */
  docker?: Dockerode | (() => Dockerode);
  /** The engine's socket as the messages name it (default: where the default client looks). */
  dockerSocket?: string;
  /** `process`: droids run as local processes, and Docker is not checked. */
  runtime?: "auto" | "docker" | "process" | undefined;
  fetch?: typeof fetch;
  env?: NodeJS.ProcessEnv;
  /** Each check's time to answer (default 5 s). */
  timeoutMs?: number;
  /** The Node version and the day it is checked on (default: this process's, today). */
  node?: { version: string; today: Date };
}

interface Engine {
  docker: Dockerode;
  socket: string;
}

/** The engine client the host-agent itself would use (runtime/select-runtime.ts), or why there is none. */
function engine(input: DoctorInput, timeoutMs: number, env: NodeJS.ProcessEnv): Engine | DoctorFinding {
  if (input.docker !== undefined) {
    let docker: Dockerode;
    try {
      docker = typeof input.docker === "function" ? input.docker() : input.docker;
    } catch (error) {
      return { check: "docker", ok: false, detail: `no Docker client: ${errorText(error)}` };
    }
    // dockerode keeps the socket it talks to on its modem (typed `any` there).
    const modemSocket: unknown = (docker.modem as { socketPath?: unknown } | undefined)?.socketPath;
    const socket =
      input.dockerSocket ?? (typeof modemSocket === "string" ? modemSocket : "the Docker client's socket");
    return { docker, socket };
  }
  const socket = input.dockerSocket ?? dockerSocketPath(env);
  if (socket === null)
    return {
      check: "docker",
      ok: false,
      detail: `DOCKER_HOST=${env.DOCKER_HOST} is not a unix:// socket; the host-agent uses the Docker Engine of this machine only`,
      fix: "unset DOCKER_HOST, or set it to unix:///var/run/docker.sock (or the engine's socket)",
    };
  return { docker: new Dockerode({ socketPath: socket, timeout: timeoutMs }), socket };
}

async function dockerFindings(
  input: DoctorInput,
  timeoutMs: number,
  env: NodeJS.ProcessEnv,
): Promise<DoctorFinding[]> {
  if (input.runtime === "process") {
    const detail =
      "not checked: the process runtime runs droids as local processes (no Docker, no isolation)";
    return [
      { check: "docker", ok: true, detail },
      { check: "docker-network", ok: true, detail },
    ];
  }
  const found = engine(input, timeoutMs, env);
  if ("check" in found)
    return [found, { check: "docker-network", ok: false, detail: "not checked: no Docker Engine to ask" }];
  const late = {
    detail: `the Docker Engine on ${found.socket} did not answer within ${seconds(timeoutMs)}`,
    fix: "check dockerd (systemctl status docker, journalctl -u docker): it may be starting or stuck",
  };
  const reachable = await timed(
    "docker",
    timeoutMs,
    () => checkDockerEngine(found.docker, found.socket),
    late,
  );
  if (!reachable.ok)
    return [
      reachable,
      { check: "docker-network", ok: false, detail: "not checked: the Docker Engine did not answer" },
    ];
  const network = await timed(
    "docker-network",
    timeoutMs,
    () => checkDockerNetwork(found.docker, found.socket),
    late,
  );
  return [reachable, network];
}

async function workerFindings(input: DoctorInput, timeoutMs: number): Promise<DoctorFinding[]> {
  const fetcher = input.fetch ?? fetch;
  const late = {
    detail: `the Worker did not answer within ${seconds(timeoutMs)}`,
    fix: "check that this host can reach the Worker (firewall, proxy, routing) and that --worker-url is right",
  };
  const health = await timed(
    "worker",
    timeoutMs,
    (signal) => checkWorkerHealth(input.workerUrl, fetcher, signal),
    late,
  );
  if (!health.ok)
    return [health, { check: "host-token", ok: false, detail: "not checked: the Worker is not reachable" }];
  const token = await timed(
    "host-token",
    timeoutMs,
    (signal) => checkHostToken(input, fetcher, signal),
    late,
  );
  return [health, token];
}

/** Runs every check (the independent ones at once); the findings come in a fixed order. */
export async function runDoctor(input: DoctorInput): Promise<DoctorFinding[]> {
  const timeoutMs = input.timeoutMs ?? DEFAULT_DOCTOR_TIMEOUT_MS;
  const env = input.env ?? process.env;
  const local = (check: string, run: () => Promise<DoctorFinding>) =>
    timed(check, timeoutMs, run, {
      detail: `no answer from the filesystem within ${seconds(timeoutMs)}`,
      fix: "a network filesystem may hang: check the mount",
    });
  const node = input.node ?? { version: process.versions.node, today: new Date() };
  const groups = await Promise.all([
    [checkNodeVersion(node.version, node.today)],
    dockerFindings(input, timeoutMs, env),
    workerFindings(input, timeoutMs),
    Promise.all([
      local("socket-dir", () => checkSocketDir(input.socketDir)),
      local("data-dir", () => checkDataDir(input.dataDir)),
      local("model-keys", () => checkModelKeys(input.modelKeys, env)),
      local("git-credentials", () => checkGitCredentials(input.gitCredentials)),
    ]),
  ]);
  return groups.flat();
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** One line of what a finding says, without control characters (a Worker's words reach a terminal). */
function printable(text: string): string {
  return text.replace(CONTROL, " ");
}

/** One line per finding (✓, ! or ✗), and under a failure or warning its fix, indented. No trailing newline. */
export function formatFindings(findings: readonly DoctorFinding[]): string {
  const lines: string[] = [];
  for (const finding of findings) {
    const mark = !finding.ok ? "✗" : finding.warning ? "!" : "✓";
    lines.push(`${mark} ${finding.check}: ${printable(finding.detail)}`);
    if ((!finding.ok || finding.warning) && finding.fix !== undefined)
      for (const line of finding.fix.split("\n")) lines.push(`    ${printable(line)}`);
  }
  return lines.join("\n");
}
