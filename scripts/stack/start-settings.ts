/**
 * What `npm start` reads from its environment, parsed once (zod), and the port it will use.
 */
import { join, resolve } from "node:path";
import { z } from "zod";
import { PROVIDER_ENV } from "../../host-agent/src/models/model-keys.js";
import { type AgentRuntime, AgentRuntimeSchema, CLI_RUNTIMES } from "../../protocol/agent-runtimes.js";
import { freePort, isPortFree, PortInUseError } from "./port.js";

/** The port `npm start` serves on unless PORT says otherwise. */
export const DEFAULT_PORT = 8787;

const StartEnvSchema = z.object({
  PORT: z
    .string()
    .regex(/^\d{1,5}$/, "PORT must be a port number (0 for any free port)")
    .transform(Number)
    .refine((port) => port <= 65_535, "PORT must be at most 65535")
    .optional(),
  OUBLIETTE_STATE_DIR: z.string().min(1).optional(),
  OUBLIETTE_RUNTIME: z
    .enum(["auto", "docker", "process"], { error: "OUBLIETTE_RUNTIME must be auto, docker or process" })
    .default("auto"),
  OUBLIETTE_ALLOWED_ORIGINS: z.string().optional(),
  OUBLIETTE_AGENT: z
    .enum(AgentRuntimeSchema.options, {
      error: `OUBLIETTE_AGENT must be one of ${AgentRuntimeSchema.options.join(", ")}`,
    })
    .default("scripted"),
});

export interface StartSettings {
  /** Undefined: the default port, or a free one if it is taken. */
  port: number | undefined;
  /** State, logs and the Worker's env file; absolute. */
  stateDir: string;
  /** `.dev.vars`: the admin and host tokens, and any other Worker variable. */
  devVarsFile: string;
  runtime: "auto" | "docker" | "process";
  /** The agent runtime whose image is built when Docker is used (`scripted`: the test droid). */
  agent: AgentRuntime;
  /** Worker variables to pass through. */
  vars: Record<string, string>;
}

/** A setting that cannot be used; its message is one line for the user. */
export class SettingsError extends Error {
  readonly code = "bad_setting";
  constructor(message: string) {
    super(message);
    this.name = "SettingsError";
  }
}

/**
 * Reads the settings. By default state lives in `<repo>/.oubliette/dev` and the tokens in
 * `<repo>/.dev.vars` (where plain `wrangler dev` finds them too); with OUBLIETTE_STATE_DIR both
 * move into that directory, so a second stack of the same checkout shares nothing with the first.
 */
export function readStartSettings(env: NodeJS.ProcessEnv, repoRoot: string): StartSettings {
  // An empty variable means unset, as in a shell's `PORT= npm start`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = StartEnvSchema.safeParse(present);
  if (!parsed.success) throw new SettingsError(parsed.error.issues.map((i) => i.message).join("; "));
  const { PORT, OUBLIETTE_STATE_DIR, OUBLIETTE_RUNTIME, OUBLIETTE_ALLOWED_ORIGINS, OUBLIETTE_AGENT } =
    parsed.data;
  const stateDir = OUBLIETTE_STATE_DIR ? resolve(OUBLIETTE_STATE_DIR) : join(repoRoot, ".oubliette", "dev");
  return {
    port: PORT,
    stateDir,
    devVarsFile: OUBLIETTE_STATE_DIR ? join(stateDir, ".dev.vars") : join(repoRoot, ".dev.vars"),
    runtime: OUBLIETTE_RUNTIME,
    agent: OUBLIETTE_AGENT,
    vars: OUBLIETTE_ALLOWED_ORIGINS ? { OUBLIETTE_ALLOWED_ORIGINS } : {},
  };
}

/**
 * The port to start on. A port asked for (PORT) that is in use is refused (PortInUseError); the
 * default port, when in use, is replaced by a free one and `moved` says so.
 */
export async function choosePort(asked: number | undefined): Promise<{ port: number; moved?: string }> {
  if (asked !== undefined) {
    if (asked !== 0 && !(await isPortFree(asked))) throw new PortInUseError(asked);
    return { port: asked };
  }
  if (await isPortFree(DEFAULT_PORT)) return { port: DEFAULT_PORT };
  const port = await freePort();
  return {
    port,
    moved: `port ${DEFAULT_PORT} is in use; using port ${port} instead (set PORT to choose one)`,
  };
}

/**
 * Which agent the local stack runs: the one OUBLIETTE_AGENT names when it can (Docker for its
 * image, and a key for its provider in the environment or a keys file), else the scripted droid,
 * with a line saying why. A chosen agent becomes the Worker's default for new projects.
 */
export function agentChoice(
  wanted: AgentRuntime,
  env: NodeJS.ProcessEnv,
  docker: boolean,
): { agent: AgentRuntime; note?: string } {
  if (wanted === "scripted") return { agent: "scripted" };
  if (!docker) {
    return {
      agent: "scripted",
      note: `OUBLIETTE_AGENT=${wanted} needs Docker (its CLI runs in its image); running the scripted droid`,
    };
  }
  const keyVariable = PROVIDER_ENV[CLI_RUNTIMES[wanted].provider].key;
  if (!env[keyVariable] && !env.OUBLIETTE_MODEL_KEYS) {
    return {
      agent: "scripted",
      note: `OUBLIETTE_AGENT=${wanted} needs a model key: set ${keyVariable} (or OUBLIETTE_MODEL_KEYS); running the scripted droid`,
    };
  }
  return { agent: wanted };
}
