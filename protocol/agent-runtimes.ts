import { z } from "zod";

/**
 * The agent runtimes a session may run, in one place: which CLI (npm package, pinned exactly),
 * how the runner starts it inside its image, and which model provider it talks to (so the
 * host-agent's model proxy knows which upstream, paths and key apply). `scripted` is the test
 * fixture: it speaks the runner's own line protocol and needs no model.
 */
export const AgentRuntimeSchema = z.enum(["scripted", "droid", "claude", "codex", "opencode", "gemini"]);
export type AgentRuntime = z.infer<typeof AgentRuntimeSchema>;

/** Model providers the host-agent's proxy can forward to. */
export const ModelProviderSchema = z.enum(["anthropic", "openai", "google"]);
export type ModelProvider = z.infer<typeof ModelProviderSchema>;

export interface CliRuntime {
  /** npm package and exact version the image is built from. */
  package: string;
  version: string;
  /** The provider the runtime's model requests go to. */
  provider: ModelProvider;
  /** The model used when neither the spawn nor the project names one. */
  defaultModel: string;
  /** argv prefix of the CLI inside its image (the adapter adds its own arguments). */
  command: readonly string[];
  /**
   * Programs the CLI runs by name and cannot do without: its image must hold them (in /usr/bin or
   * /bin) and the runner refuses to start the CLI where they are missing.
   */
  needs?: readonly string[];
}

/** Where agent CLIs live inside runtime images. */
export const AGENTS_DIR = "/opt/agents";

export const CLI_RUNTIMES: Readonly<Record<Exclude<AgentRuntime, "scripted">, CliRuntime>> = {
  droid: {
    package: "droid",
    version: "0.215.0",
    provider: "anthropic",
    defaultModel: "claude-sonnet-4-5",
    command: [`${AGENTS_DIR}/droid/droid`],
    // Its Execute tool runs each command under a bash supervisor that polls `ps` for droid's pid:
    // without bash droid exits (code 1) on the first command; without ps every command is killed.
    needs: ["bash", "ps"],
  },
  claude: {
    package: "@anthropic-ai/claude-code",
    version: "2.1.330",
    provider: "anthropic",
    defaultModel: "claude-sonnet-4-5",
    command: [`${AGENTS_DIR}/claude/claude`],
  },
  codex: {
    package: "@openai/codex",
    version: "0.169.0",
    provider: "openai",
    defaultModel: "gpt-5",
    command: [`${AGENTS_DIR}/codex/bin/codex`],
  },
  opencode: {
    package: "opencode-ai",
    version: "1.18.33",
    provider: "openai",
    defaultModel: "gpt-5",
    command: [`${AGENTS_DIR}/opencode/opencode`],
  },
  gemini: {
    package: "@google/gemini-cli",
    version: "0.61.0",
    provider: "google",
    defaultModel: "gemini-2.5-pro",
    command: ["node", `${AGENTS_DIR}/gemini/node_modules/@google/gemini-cli/bundle/gemini.js`],
  },
};

/** What each runtime is, for people (project options, tool descriptions). */
export const AGENT_TITLES: Readonly<Record<AgentRuntime, string>> = {
  scripted: "The scripted test droid (no model; runs JSON scripts it is sent).",
  droid: "Factory Droid",
  claude: "Claude Code",
  codex: "Codex",
  opencode: "OpenCode",
  gemini: "Gemini CLI",
};

/**
 * The local image a host runs a runtime's projects in (built by `npm start` / the test setup,
 * scripts/docker): the runtime's pinned CLI, the runner and the container-client. The scripted
 * droid runs in the host's default image.
 */
export function agentImageRef(runtime: AgentRuntime): string | undefined {
  return runtime === "scripted" ? undefined : `${agentImageRepo(runtime)}:${AGENT_IMAGE_TAG}`;
}

export const AGENT_IMAGE_TAG = "dev";

export function agentImageRepo(runtime: Exclude<AgentRuntime, "scripted">): string {
  return `oubliette/agent-${runtime}`;
}

/** The runtime a session gets when neither the spawn nor its project names one. */
export const DEFAULT_AGENT_RUNTIME: AgentRuntime = "scripted";
