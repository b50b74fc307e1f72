/**
 * `host-agent start`: runs droids on this machine and tunnels them to the Oubliette Worker. It
 * dials OUT to the Worker (no inbound port), keeps one host channel for projects, workspaces and
 * session start/stop, and one tunnel per running session; it runs one container per project
 * (sessions are agent processes in it) and serves each container's socket.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { createLogger } from "../../../lib/log.js";
import { agentCliCache, droidBundles } from "../bundles/droid-bundles.js";
import type { HostAgentConfig } from "../config.js";
import { resolveDiskSettings } from "../disk/resolve-disk.js";
import { defaultAddressPolicy } from "../egress/address-check.js";
import { EgressGate } from "../egress/egress-gate.js";
import { GitCredentials } from "../git/git-credentials.js";
import { RunnerKits } from "../kit/runner-kits.js";
import { configuredProviders, loadModelKeys, type ModelKeys } from "../models/model-keys.js";
import { ModelProxy } from "../models/model-proxy.js";
import { ProjectManager } from "../projects/project-manager.js";
import { ensureContainerEhash } from "../runtime/container-ehash.js";
import { selectRuntime } from "../runtime/select-runtime.js";
import { HostControl } from "../tunnel/host-control.js";
import { HOST_AGENT_VERSION } from "../version.js";
import { bundleCommands } from "./start-options.js";

/** Runs the host-agent until SIGTERM or SIGINT (or a fatal error, which exits the process). */
export async function start(settings: HostAgentConfig): Promise<void> {
  const logger = createLogger({ name: "host-agent", level: settings.logLevel });
  // Workspaces are the projects' data: nobody else on this host needs to look in.
  await mkdir(settings.dataDir, { recursive: true, mode: 0o700 });
  // The process runtime runs the container-side programs from this host; Docker has them in its images.
  const bundles = await droidBundles(settings.dataDir).catch((err: Error) => {
    logger.warn({ err: err.message }, "no container-side bundles: the process runtime is unavailable");
    return null;
  });
  const config: HostAgentConfig = { ...(bundles === null ? {} : bundleCommands(bundles)), ...settings };

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
    docker: { imagePull: config.imagePull },
    // Images that are not ours run with the runner kit, made from these bundles on first use.
    ...(bundles === null
      ? {}
      : {
          kits: new RunnerKits({
            dir: join(settings.dataDir, "kits"),
            bundles,
            cliCache: settings.cliCache ?? agentCliCache(settings.dataDir),
            log: (line) => logger.info(line),
          }),
        }),
  }).catch((err: Error) => {
    logger.fatal({ err: err.message }, "no runtime");
    process.exit(1);
  });
  // Before any container (and its network namespace) is made: see container-ehash.ts.
  if (runtime.kind === "docker") await ensureContainerEhash(config.containerEhashEntries, logger);
  if (runtime.kind === "process" && !config.runnerCommand) {
    logger.fatal("the process runtime needs the container-client bundle: run `npm run build`");
    process.exit(2);
  }
  await mkdir(config.socketDir, { recursive: true, mode: 0o711 });

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
  if (config.egressTestResolve.size > 0)
    logger.warn(
      { names: [...config.egressTestResolve.keys()] },
      "test names reach loopback through the egress gate (--egress-test-resolve)",
    );
  const egress = new EgressGate({ addresses: defaultAddressPolicy(config.egressTestResolve), logger });

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
    egress,
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
    agentVersion: HOST_AGENT_VERSION,
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

  projects.onNetworkBlocked = (projectId, who, event) =>
    control.networkBlocked({ project_id: projectId, who, ...event });

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
}
