/**
 * `npm start`: the whole product on this machine. Starts the Worker on its local server and a
 * host-agent connected to it (Docker when an engine is reachable, otherwise local processes),
 * then prints the MCP URL, the admin token and how to add it to an MCP client.
 *
 * Every way out — Ctrl-C, SIGTERM, SIGHUP, a failure at any step, wrangler dying, the host-agent
 * failing for good — prints at most one line and stops every process it started (each child runs
 * in its own process group and is stopped as a group). OUBLIETTE_DEBUG=1 adds stack traces.
 */
import { mkdir } from "node:fs/promises";
import { stop as stopEsbuild } from "esbuild";
import { ensureAgentImages } from "../host-agent/src/images/agent-images.js";
import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { buildAll, repoRoot } from "./build.js";
import { ensureDockerEngine, isDockerReachable } from "./docker/engine.js";
import { readDevVars } from "./stack/dev-vars.js";
import type { HostAgent } from "./stack/host-agent-process.js";
import { localHostId } from "./stack/host-id.js";
import { LocalStack } from "./stack/local-stack.js";
import { PortInUseError } from "./stack/port.js";
import { describeExit, killGroupsNow } from "./stack/process-group.js";
import { agentChoice, choosePort, readStartSettings } from "./stack/start-settings.js";
import { Supervisor } from "./stack/supervisor.js";

const say = (line = "") => process.stdout.write(`${line}\n`);
const complain = (line: string) => process.stderr.write(`${line}\n`);

const stopping = new AbortController();
let stack: LocalStack | undefined;
let supervisor: Supervisor<HostAgent> | undefined;
let shuttingDown = false;
let started: Promise<void> | undefined;

/** Starts everything; `stack` and `supervisor` are set as soon as they exist. */
async function main(signal: AbortSignal): Promise<void> {
  const settings = readStartSettings(process.env, repoRoot);
  // Before the slow steps, so that a busy PORT is refused at once.
  const { port, moved } = await choosePort(settings.port);
  say("oubliette: building the host-agent, container-client and scripted droid");
  const bundles = await buildAll();
  // esbuild keeps a service process for more builds; there are none, and it must not linger.
  await stopEsbuild();
  signal.throwIfAborted();
  await mkdir(settings.stateDir, { recursive: true });
  const devVars = await readDevVars(settings.devVarsFile);
  let image: string | undefined;
  const useDocker =
    settings.runtime === "docker" || (settings.runtime === "auto" && (await isDockerReachable()));
  const choice = agentChoice(settings.agent, process.env, useDocker);
  if (choice.note) say(`oubliette: ${choice.note}`);
  const agent = choice.agent;
  let agentImage: string | undefined;
  if (useDocker) {
    const engine = await ensureDockerEngine({ install: false });
    const log = (line: string) => say(`oubliette: ${line}`);
    image = await ensureDroidImage(engine.docker, bundles, log);
    if (agent !== "scripted") {
      // The first time this fetches the pinned CLI from npm (hundreds of MB) and builds its image.
      agentImage = (await ensureAgentImages(engine.docker, bundles, [agent], log))[agent];
    }
  } else {
    if (settings.runtime === "auto") {
      say("oubliette: no Docker Engine is reachable; droids will run as local processes (no isolation)");
    }
  }
  signal.throwIfAborted();
  if (moved) say(`oubliette: ${moved}`);
  stack = await LocalStack.start({
    dir: settings.stateDir,
    port,
    adminToken: devVars.admin,
    hostToken: devVars.host,
    // What plain `wrangler dev` would read from .dev.vars, then what the environment says.
    vars: {
      ...devVars.vars,
      ...settings.vars,
      ...(agent !== "scripted" ? { OUBLIETTE_DEFAULT_AGENT: agent } : {}),
    },
    signal,
  });
  const running = stack;
  void running.worker.exited.then((exit) =>
    shutdown(
      1,
      `oubliette: the Worker's local server exited (${describeExit(exit)}); see ${running.worker.logFile}`,
    ),
  );
  const host = await running.addHost({
    runtime: image ? "docker" : "process",
    image,
    hostId: localHostId(settings.stateDir),
    signal,
  });
  let latest = host;
  supervisor = new Supervisor({
    name: `host-agent ${host.hostId}`,
    logFile: host.logFile,
    first: host,
    restart: async (abort) => {
      latest = await running.restartHost(latest, abort);
      return latest;
    },
    report: complain,
    onGiveUp: (line) => void shutdown(1, line),
  });
  printBanner(running, host, devVars.admin, image, agentImage);
}

/** The one output that shows a secret, on purpose: the user needs the admin token for a client. */
function printBanner(
  running: LocalStack,
  host: HostAgent,
  adminToken: string,
  image?: string,
  agentImage?: string,
): void {
  const mcpUrl = running.mcpUrl.toString();
  say();
  say("Oubliette Edge is running.");
  say();
  say(`  MCP URL:      ${mcpUrl}`);
  say(`  Console:      ${new URL("/", mcpUrl)} (open it in a browser; sign in with the admin token)`);
  say(`  Admin token:  ${adminToken}`);
  say(`  Host-agent:   ${host.hostId} (${image ? `Docker, image ${image}` : "local processes"})`);
  if (agentImage) say(`  Agent:        ${agentImage} (new projects run it by default)`);
  say(`  Logs:         ${running.worker.logFile}, ${host.logFile}`);
  say();
  say("Add it to an MCP client, either way:");
  say(`  sign in (OAuth): claude mcp add --transport http oubliette ${mcpUrl}`);
  say("    the client opens a browser page: paste the admin token there once, then choose what it may do");
  say(
    `  with the token:  claude mcp add --transport http oubliette ${mcpUrl} --header "Authorization: Bearer ${adminToken}"`,
  );
  say(
    `    or in a client's JSON config: {"url": "${mcpUrl}", "headers": {"Authorization": "Bearer ${adminToken}"}}`,
  );
  say();
  say('Then create a project and start a droid in it (README, "A walk-through"):');
  say('  project {"action":"create","name":"my-project"}   -> project_id');
  say('  session {"action":"spawn","project_id":"prj_…","prompt":"…"}');
  say();
  say("Press Ctrl-C to stop.");
}

/** Stops everything that was started, then exits with `code`; `line` is said first. */
async function shutdown(code: number, line?: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  if (line) (code === 0 ? say : complain)(line);
  stopping.abort();
  // A start in progress stops what it has begun before it rejects.
  await started?.catch(() => {});
  await supervisor?.stop().catch(report);
  await stack?.stop().catch(report);
  process.exit(code);
}

/** One line for an error (its stack only with OUBLIETTE_DEBUG). */
function report(err: unknown): void {
  complain(`oubliette: ${errorLine(err)}`);
  if (process.env.OUBLIETTE_DEBUG && err instanceof Error && err.stack) complain(err.stack);
}

function errorLine(err: unknown): string {
  if (err instanceof PortInUseError) return `${err.message}; set PORT to a free port`;
  const message = err instanceof Error ? err.message : String(err);
  return (message.split("\n").find((l) => l.trim()) ?? "failed").trim().replace(/^oubliette: /, "");
}

function fail(err: unknown): void {
  if (shuttingDown) {
    // Already stopping (the abort of a start in progress lands here): nothing new to say.
    if (process.env.OUBLIETTE_DEBUG) report(err);
    return;
  }
  report(err);
  void shutdown(1);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (!shuttingDown) return void shutdown(0, "\noubliette: stopping");
    // A second signal while stopping: stop waiting for graceful exits.
    killGroupsNow();
    process.exit(1);
  });
}
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
// The last resort if this process exits any other way: no child may outlive it.
process.on("exit", killGroupsNow);

started = main(stopping.signal);
started.catch(fail);
