/**
 * Turns an `agent_start` into what the slot runs: the runtime's adapter (driver), its launch
 * (argv, environment, config files) and the agent's home. The scripted test droid keeps the
 * image's command and the runner's environment; a CLI runtime gets its catalogue command, a home
 * of its own, the model forwarder's URL and its session's placeholder model credential, and does
 * not start in a container lacking the CLI or a program it needs.
 */
import { existsSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { type AgentRuntime, CLI_RUNTIMES } from "../../../protocol/agent-runtimes.js";
import { API_KEY_ENV } from "../../../protocol/oubliette-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { AgentEnv, type AgentLaunchSpec } from "../../../protocol/socket.js";
import type { AgentDriver, AgentLaunch, DriverContext } from "../agents/driver.js";
import { DRIVERS } from "../agents/registry.js";

export interface LaunchSettings {
  /** The scripted agent's command (the image's OUBLIETTE_AGENT_COMMAND). */
  scriptedCommand: string[];
  /** How to run the container-client as an MCP server (this very program, in its default mode). */
  mcpCommand: { command: string; args: string[] };
  /** The socket a session's container-client uses when the host names none (its own, normally). */
  socketPath: string;
  /** The model forwarder's base URL; null when it could not start (CLI runtimes then refuse to start). */
  modelBaseUrl: string | null;
  /** Where agents' homes are made, one directory per session, when the host names none. */
  homeRoot: string;
  /** The egress proxy's port (null: it could not start; agents then get no proxy settings). */
  egressPort: number | null;
}

export interface PreparedLaunch {
  runtime: AgentRuntime;
  /** The agent's home to create first. */
  home: string;
  modelToken?: string;
  /**
   * A driver and its launch for one process of the agent: the first one, or after a crash one
   * that resumes the CLI's conversation `resume` (its own id, from the dead process's driver).
   */
  build(resume?: string): { driver: AgentDriver; launch: AgentLaunch };
}

export interface LaunchRequest {
  sessionId: string;
  sessionToken: string;
  cwd: string;
  /** The session's own socket (its container-client connects there). */
  socketPath?: string | undefined;
  /** The session's private home, made by the host for its uid. */
  home?: string | undefined;
  /** The droid's key for Oubliette's own tools, when its session has one. */
  apiKey?: string | undefined;
  agent: AgentLaunchSpec;
}

export function prepareLaunch(settings: LaunchSettings, request: LaunchRequest): PreparedLaunch {
  const { runtime } = request.agent;
  const factory = DRIVERS[runtime];
  if (factory === undefined) {
    throw new RpcError(
      RpcErrorCode.InvalidParams,
      `this container has no adapter for the ${runtime} runtime`,
      {
        reason: "unsupported",
      },
    );
  }
  const home = request.home ?? join(settings.homeRoot, request.sessionId);
  const mcpServer = {
    name: "oubliette",
    command: settings.mcpCommand.command,
    args: settings.mcpCommand.args,
    env: {
      [AgentEnv.socketPath]: request.socketPath ?? settings.socketPath,
      [AgentEnv.sessionId]: request.sessionId,
      [AgentEnv.sessionToken]: request.sessionToken,
      // Said explicitly: Codex and Gemini start MCP servers with only the environment their config names.
      ...(request.apiKey !== undefined ? { [API_KEY_ENV]: request.apiKey } : {}),
    },
  };
  const builder =
    (context: Omit<DriverContext, "resume">) =>
    (resume?: string): { driver: AgentDriver; launch: AgentLaunch } => {
      const driver = factory({ ...context, ...(resume !== undefined ? { resume } : {}) });
      const launch = driver.launch();
      return { driver, launch: { ...launch, env: { ...launch.env, HOME: home } } };
    };
  if (runtime === "scripted") {
    const build = builder({
      runtime,
      sessionId: request.sessionId,
      cwd: request.cwd,
      home,
      model: request.agent.model ?? "scripted",
      modelBaseUrl: settings.modelBaseUrl ?? "",
      modelToken: request.agent.model_token ?? "",
      command: settings.scriptedCommand,
      mcpServer,
      approvals: request.agent.approvals,
    });
    return { runtime, home, build };
  }
  const cli = CLI_RUNTIMES[runtime];
  const missing = cli.command.find((part) => isAbsolute(part) && !existsSync(part));
  if (missing !== undefined) {
    throw new RpcError(
      RpcErrorCode.ServerError,
      `this container has no ${runtime} CLI (${missing} is missing): run the project in the ${runtime} image ` +
        "(set its default_agent, or an image built for that runtime)",
      { reason: "unsupported" },
    );
  }
  const lacking = lackingPrograms(cli.needs ?? []);
  if (lacking.length > 0) {
    throw new RpcError(
      RpcErrorCode.ServerError,
      `this container has no ${lacking.join(" or ")}, which the ${runtime} CLI cannot do without: run the ` +
        `project in the ${runtime} image, or add them to yours`,
      { reason: "unsupported" },
    );
  }
  if (settings.modelBaseUrl === null) {
    throw new RpcError(
      RpcErrorCode.ServerError,
      "the model forwarder is not running; no model can be reached",
      {
        reason: "runtime_error",
      },
    );
  }
  const modelToken = request.agent.model_token;
  if (modelToken === undefined) {
    throw new RpcError(RpcErrorCode.InvalidParams, `a ${runtime} agent needs a model credential`, {
      reason: "invalid",
    });
  }
  const build = builder({
    runtime,
    sessionId: request.sessionId,
    cwd: request.cwd,
    home,
    model: request.agent.model ?? cli.defaultModel,
    modelBaseUrl: settings.modelBaseUrl,
    modelToken,
    // A CLI that is a Node script runs on the runner's own Node (in an image that is not ours, the
    // kit's: the image's `node`, if it has one, may be any version).
    command: cli.command[0] === "node" ? [process.execPath, ...cli.command.slice(1)] : cli.command,
    mcpServer,
    approvals: request.agent.approvals,
  });
  return { runtime, home, build, modelToken };
}

/** The programs of `names` found neither in /usr/bin, /bin nor a directory of `path` (a PATH value). */
export function lackingPrograms(
  names: readonly string[],
  path: string = process.env.PATH ?? "",
  exists: (file: string) => boolean = existsSync,
): string[] {
  const dirs = [...new Set(["/usr/bin", "/bin", ...path.split(delimiter).filter(isAbsolute)])];
  return names.filter((name) => !dirs.some((dir) => exists(join(dir, name))));
}
