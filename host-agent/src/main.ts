#!/usr/bin/env node
/**
 * host-agent: runs droids on this machine and tunnels them to the Oubliette Worker.
 * It dials OUT to the Worker (no inbound port), keeps one host channel for projects, workspaces
 * and session start/stop, and one tunnel per running session; it runs one container per project
 * (sessions are agent processes in it) and serves each container's socket.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Command, Option } from "commander";
import { createLogger } from "../../lib/log.js";
import { HostAgentConfigSchema } from "./config.js";
import { resolveDiskSettings } from "./disk/resolve-disk.js";
import { GitCredentials } from "./git/git-credentials.js";
import { configuredProviders, loadModelKeys, type ModelKeys } from "./models/model-keys.js";
import { ModelProxy } from "./models/model-proxy.js";
import { ProjectManager } from "./projects/project-manager.js";
import { selectRuntime } from "./runtime/select-runtime.js";
import { HostControl } from "./tunnel/host-control.js";

const VERSION = "0.1.0";

/** A bundle next to this file (bundle) or in dist/ (source checkout), run with this Node. */
function bundled(name: string, ...args: string[]): string[] | undefined {
  for (const rel of [`./${name}`, `../../dist/${name}`]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return [process.execPath, path, ...args];
  }
  return undefined;
}

function parseCommand(value: string): string[] {
  try {
    const parsed: unknown = JSON.parse(value);
    if (Array.isArray(parsed) && parsed.every((p) => typeof p === "string")) return parsed;
  } catch {
    // fall through to the error below
  }
  throw new Error('--agent-command must be a JSON array of strings, e.g. ["node","droid.mjs"]');
}

const program = new Command()
  .name("host-agent")
  .description("Runs Oubliette droids on this machine and connects them to the Worker.")
  .version(VERSION)
  .addOption(new Option("--worker-url <url>", "URL of the Oubliette Worker").env("OUBLIETTE_WORKER_URL"))
  .addOption(new Option("--host-token <token>", "host token the Worker accepts").env("OUBLIETTE_HOST_TOKEN"))
  .addOption(new Option("--host-id <id>", "name of this host (default: hostname)").env("OUBLIETTE_HOST_ID"))
  .addOption(
    new Option("--runtime <kind>", "where droids run")
      .choices(["auto", "docker", "process"])
      .env("OUBLIETTE_RUNTIME"),
  )
  .addOption(
    new Option("--image <image>", "Docker image for sessions (default oubliette/droid:dev)").env(
      "OUBLIETTE_IMAGE",
    ),
  )
  .addOption(
    new Option("--agent-command <json>", "process runtime: the agent program, as a JSON array")
      .env("OUBLIETTE_AGENT_COMMAND")
      .argParser(parseCommand),
  )
  .addOption(
    new Option("--socket-dir <dir>", "where per-project socket directories go").env("OUBLIETTE_SOCKET_DIR"),
  )
  .addOption(
    new Option("--data-dir <dir>", "where project workspaces and records go").env("OUBLIETTE_DATA_DIR"),
  )
  .addOption(
    new Option("--max-sessions <n>", "most sessions this host runs at once").env("OUBLIETTE_MAX_SESSIONS"),
  )
  .addOption(
    new Option("--max-projects <n>", "most project containers this host runs at once").env(
      "OUBLIETTE_MAX_PROJECTS",
    ),
  )
  .addOption(new Option("--heartbeat-ms <ms>", "tunnel heartbeat period").env("OUBLIETTE_HEARTBEAT_MS"))
  .addOption(
    new Option("--reconnect-max-ms <ms>", "cap of the tunnel reconnect backoff").env(
      "OUBLIETTE_RECONNECT_MAX_MS",
    ),
  )
  .addOption(
    new Option(
      "--model-keys <file>",
      'model provider keys, JSON: {"anthropic":{"api_key":"…","base_url":"…"},…} (or OUBLIETTE_<PROVIDER>_API_KEY)',
    ).env("OUBLIETTE_MODEL_KEYS"),
  )
  .addOption(
    new Option(
      "--git-credentials <file>",
      'git credentials by name, JSON: {"github-acme":{"token":"…","username":"…"}} (projects name one as git_credential)',
    ).env("OUBLIETTE_GIT_CREDENTIALS"),
  )
  .addOption(
    new Option(
      "--git-allow-local-remotes",
      "let git reach http://, file:// and loopback or private addresses (default: public https:// and ssh:// only; or OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES=1)",
    ),
  )
  .addOption(
    new Option(
      "--disk-mode <mode>",
      "how projects' disk use is bounded: a loop-mounted filesystem each, or measured (auto: filesystem where it works)",
    )
      .choices(["auto", "filesystem", "measured"])
      .env("OUBLIETTE_DISK_MODE"),
  )
  .addOption(
    new Option("--disk-mb <mib>", "a project's disk bound when it names none (default 10240)").env(
      "OUBLIETTE_DISK_MB",
    ),
  )
  .addOption(
    new Option("--disk-check-ms <ms>", "how often projects' disk use is measured (≤ 10000)").env(
      "OUBLIETTE_DISK_CHECK_MS",
    ),
  )
  .addOption(
    new Option(
      "--min-free-disk-mb <mib>",
      "refuse new work while the data disk has less free (default 1024)",
    ).env("OUBLIETTE_MIN_FREE_DISK_MB"),
  )
  .addOption(
    new Option("--tmp-mb <mib>", "each container's in-memory /tmp (default 64)").env("OUBLIETTE_TMP_MB"),
  )
  .addOption(new Option("--log-level <level>", "log level").env("OUBLIETTE_LOG_LEVEL"));

program.parse();
const flags = program.opts<Record<string, unknown>>();
const parsed = HostAgentConfigSchema.safeParse({
  ...flags,
  // Read here, not by commander, which would take any value of the variable ("0" too) as yes.
  gitAllowLocalRemotes: flags.gitAllowLocalRemotes ?? process.env.OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES,
  defaultAgentCommand: bundled("scripted-droid.mjs"),
  runnerCommand: bundled("container-client.mjs", "runner"),
});
if (!parsed.success) {
  for (const issue of parsed.error.issues) process.stderr.write(`host-agent: ${issue.message}\n`);
  process.stderr.write("host-agent: see --help\n");
  process.exit(2);
}
const config = parsed.data;
const logger = createLogger({ name: "host-agent", level: config.logLevel });

process.on("uncaughtException", (err) => {
  logger.fatal({ err }, "uncaught exception");
  process.exit(1);
});
process.on("unhandledRejection", (err) => {
  logger.fatal({ err }, "unhandled rejection");
  process.exit(1);
});

const runtime = await selectRuntime({
  prefer: config.runtime,
  hostId: config.hostId,
  logger,
  dockerImage: config.image,
  runnerCommand: config.runnerCommand ?? [],
  // Docker runs the image's own agent unless one is named; the default is a path on this host.
  agentCommand: config.agentCommand,
  processAgentCommand: config.agentCommand ?? config.defaultAgentCommand,
}).catch((err: Error) => {
  logger.fatal({ err: err.message }, "no runtime");
  process.exit(1);
});
if (runtime.kind === "process" && !config.runnerCommand) {
  logger.fatal("the process runtime needs the container-client bundle: run `npm run build`");
  process.exit(2);
}
await mkdir(config.socketDir, { recursive: true, mode: 0o711 });
// Workspaces are the projects' data: nobody else on this host needs to look in.
await mkdir(config.dataDir, { recursive: true, mode: 0o700 });

let modelKeys: ModelKeys;
try {
  modelKeys = loadModelKeys(process.env, config.modelKeys);
} catch (err) {
  logger.fatal({ err: (err as Error).message }, "invalid model keys");
  process.exit(2);
}
// Which providers have a key, never the keys.
logger.info({ providers: configuredProviders(modelKeys) }, "model providers configured");
let gitCredentials: GitCredentials;
try {
  gitCredentials = GitCredentials.load(config.gitCredentials);
} catch (err) {
  logger.fatal({ err: (err as Error).message }, "invalid git credentials");
  process.exit(2);
}
// Their names, never their secrets.
logger.info(
  { git_credentials: gitCredentials.names(), git_local_remotes: config.gitAllowLocalRemotes },
  "git configured",
);
const models = new ModelProxy({ keys: modelKeys, logger });

const disk = await resolveDiskSettings(config, runtime.kind, logger);

const timing = { heartbeatMs: config.heartbeatMs, maxReconnectDelayMs: config.reconnectMaxMs };
const projects = new ProjectManager({
  workerUrl: config.workerUrl,
  hostToken: config.hostToken,
  hostId: config.hostId,
  runtime,
  dataDir: config.dataDir,
  socketRoot: config.socketDir,
  maxSessions: config.maxSessions,
  maxProjects: config.maxProjects,
  models,
  disk,
  timing,
  logger,
  git: { policy: { allowLocal: config.gitAllowLocalRemotes }, credentials: gitCredentials },
});
// Containers an earlier run left running (and their sessions) are served again before the host
// reports what it runs.
await projects.adopt(await runtime.adopt());

const control = new HostControl({
  workerUrl: config.workerUrl,
  hostToken: config.hostToken,
  hostId: config.hostId,
  runtime: runtime.kind,
  agentVersion: VERSION,
  maxSessions: config.maxSessions,
  disk: { mode: disk.mode, default_mb: disk.defaultMb },
  timing,
  host: projects,
  logger,
  onRefused: (status) => {
    logger.fatal({ status }, "the Worker refused this host; check --host-token and --worker-url");
    void shutdown(1);
  },
});

let stopping = false;
async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  // Ending process-runtime sessions needs the Worker; if it is gone, do not hang on it forever.
  setTimeout(() => {
    logger.error("sessions did not finish within 20 s; exiting anyway");
    process.exit(code === 0 ? 1 : code);
  }, 20_000).unref();
  await projects.shutdown("the host-agent shut down (sessions of the process runtime do not survive it)");
  control.close();
  logger.info(
    { left_running: runtime.survivesRestart ? projects.running().length : 0 },
    "host-agent stopped",
  );
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

control.start();
logger.info(
  { worker: config.workerUrl, host_id: config.hostId, runtime: runtime.kind },
  "host-agent started",
);
