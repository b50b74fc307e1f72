/**
 * The real agent CLIs as e2e tests drive them: the host's model key, each runtime's model, and
 * each CLI's own shell tool as its (fake) model calls it.
 */
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";

export const HOST_KEY = "sk-oubliette-e2e-host-key-0123456789abcdef";
export const MODELS: Partial<Record<AgentRuntime, string>> = {
  claude: "claude-sonnet-4-5",
  droid: "claude-sonnet-4-5",
  codex: "gpt-5",
  opencode: "gpt-5",
  gemini: "gemini-2.5-pro",
};
/**
 * Each CLI's user agent, as its model requests carry it through the host's model proxy (which
 * passes it on): how a test running the five at once tells their requests apart.
 */
const USER_AGENTS: readonly (readonly [AgentRuntime, RegExp])[] = [
  ["claude", /^claude-cli\//],
  // Codex's app-server names its requests after its client: the runner ("oubliette/<codex version>").
  ["codex", /^oubliette\//],
  ["opencode", /^opencode\//],
  ["gemini", /^GeminiCLI/],
  ["droid", /^factory-cli\//],
];

/** The runtime whose CLI made a model request, by its user agent; null when none matches. */
export function runtimeOfRequest(headers: Readonly<Record<string, string>>): AgentRuntime | null {
  const agent = headers["user-agent"] ?? "";
  return USER_AGENTS.find(([, pattern]) => pattern.test(agent))?.[0] ?? null;
}

/** The host-agent's environment that sends every CLI's model traffic to the fake model. */
export function modelEnv(modelUrl: string): Record<string, string> {
  return {
    OUBLIETTE_ANTHROPIC_API_KEY: HOST_KEY,
    OUBLIETTE_ANTHROPIC_BASE_URL: modelUrl,
    OUBLIETTE_OPENAI_API_KEY: HOST_KEY,
    OUBLIETTE_OPENAI_BASE_URL: modelUrl,
    OUBLIETTE_GEMINI_API_KEY: HOST_KEY,
    OUBLIETTE_GEMINI_BASE_URL: modelUrl,
  };
}

/** Each CLI's own shell tool, as its model calls it. */
export function shellCall(
  runtime: AgentRuntime,
  command: string,
): { tool: string; arguments: Record<string, unknown> } {
  switch (runtime) {
    case "claude":
      return { tool: "Bash", arguments: { command, description: "Make a file" } };
    case "droid":
      return {
        tool: "Execute",
        arguments: {
          command,
          summary: "Make a file",
          riskLevel: "low",
          riskLevelReason: "It makes one file.",
        },
      };
    case "codex":
      return { tool: "exec_command", arguments: { cmd: command } };
    case "opencode":
      return { tool: "bash", arguments: { command } };
    default:
      return { tool: "run_shell_command", arguments: { command } };
  }
}
