/**
 * The runner's entry: reads its settings from the environment the host-agent gave the container,
 * then runs as long as the container (or, under the process runtime, as long as its parent).
 */
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import { EGRESS_SOCKET_NAME, MODEL_SOCKET_NAME } from "../../../protocol/container-layout.js";
import { parseJson } from "../../../protocol/json.js";
import { AgentEnv, DEFAULT_SOCKET_PATH, RUNNER_ONLY_ENV } from "../../../protocol/socket.js";
import { EgressForwarder } from "./egress-forwarder.js";
import { readContainerMemory } from "./memory-cgroup.js";
import { MemoryGuard } from "./memory-guard.js";
import { ModelForwarder } from "./model-forwarder.js";
import { readProcesses } from "./process-table.js";
import { Runner } from "./runner.js";

const CommandSchema = z.array(z.string().min(1)).min(1).max(256);
/** How long a stopping agent gets between SIGTERM and SIGKILL (Docker gives the container 10 s). */
const STOP_GRACE_MS = 6_000;

/** Starts the runner; exits the process when it is done. */
export async function runRunner(log: Logger): Promise<void> {
  const env = process.env;
  const token = env[AgentEnv.runnerToken] ?? "";
  const raw = parseJson(env[AgentEnv.agentCommand] ?? "");
  const command = CommandSchema.safeParse(raw.ok ? raw.value : undefined);
  if (token === "" || !command.success) {
    log.fatal(
      { missing: token === "" ? AgentEnv.runnerToken : AgentEnv.agentCommand },
      `the runner needs ${AgentEnv.runnerToken} and ${AgentEnv.agentCommand} (a JSON array of strings)`,
    );
    process.exit(2);
  }
  // Sessions of one workspace are different uids in one group: what they make is the group's too.
  process.umask(0o002);
  // Agents get our environment minus what only the runner may see (its secret above all).
  const agentEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && !RUNNER_ONLY_ENV.includes(key)) agentEnv[key] = value;
  }
  const socketPath = env[AgentEnv.socketPath] || DEFAULT_SOCKET_PATH;
  // Before any agent: CLIs call their model while they are still starting.
  const forwarder = await ModelForwarder.start(join(dirname(socketPath), MODEL_SOCKET_NAME), log).catch(
    (err: Error) => {
      log.error({ err: err.message }, "the model forwarder could not start; CLI agents cannot run");
      return null;
    },
  );
  // Before any agent too: whatever an agent or its command fetches goes through the host's gate.
  let runner: Runner | null = null;
  const egress = await EgressForwarder.start({
    socketPath: join(dirname(socketPath), EGRESS_SOCKET_NAME),
    runnerToken: token,
    peerOf: (uid) => runner?.egressPeer(uid) ?? { kind: "unknown", uid },
    byUid: env[AgentEnv.separateSessions] === "1",
    logger: log,
  }).catch((err: Error) => {
    log.error({ err: err.message }, "the egress proxy could not start; agents get no network");
    return null;
  });
  runner = new Runner({
    socketPath,
    runnerToken: token,
    launch: {
      scriptedCommand: command.data,
      mcpCommand: { command: process.execPath, args: process.argv.slice(1, 2) },
      socketPath,
      modelBaseUrl: forwarder?.baseUrl ?? null,
      homeRoot: join(tmpdir(), "oubliette-agents"),
      egressPort: egress?.port ?? null,
    },
    agentEnv,
    separateSessions: env[AgentEnv.separateSessions] === "1",
    ports: () => ({
      ...(egress ? { egress: egress.port } : {}),
      ...(forwarder ? { model: Number(new URL(forwarder.baseUrl).port) } : {}),
    }),
    logger: log,
    // Agents' stderr joins ours, so the container's logs show what each session's agent did.
    echo: (line) => process.stderr.write(`${line}\n`),
    onDone: (code) => process.exit(code),
  });
  const stop = (reason: string) => void runner.shutdown(reason, STOP_GRACE_MS);
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  if (env[AgentEnv.exitWithParent] === "1") {
    // Process runtime: our stdin is a pipe from the host-agent; its end means the host-agent is gone.
    process.stdin.on("data", () => {});
    process.stdin.once("end", () => stop("the host-agent is gone (process runtime)"));
  }
  if (env[AgentEnv.separateSessions] === "1") {
    // In a container: agents that use up its memory must not take the runner (and every session) down.
    new MemoryGuard({
      read: () => readContainerMemory(),
      processes: () => readProcesses(),
      kill: (pid) => process.kill(pid, "SIGKILL"),
      ended: (victim) => runner?.memoryEnded(victim),
      logger: log,
      ownUid: process.getuid?.() ?? 0,
    }).start();
  }
  runner.start();
  log.info({ command: command.data }, "runner started");
}
