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
