/**
 * Gemini CLI: `gemini --acp -m <model> --yolo --skip-trust` (always an explicit model: without one
 * its router makes extra calls and retries for a long time); when the session's approvals ask,
 * `--approval-mode default` instead of `--yolo`, so its policy asks (over ACP) before a shell
 * command, a file write or edit, a web fetch or a skill (`gemini-permission.ts`), while our own
 * MCP server, trusted, never asks. The model forwarder is its Gemini API base URL, the
 * placeholder credential its API key; `~/.gemini/settings.json` in the agent's home picks API-key
 * auth, switches off usage statistics, telemetry and updates, and holds the MCP server (trusted,
 * its calls allowed to run as long as Oubliette's own deadlines let them), as the recorded
 * session had it.
 */
import { join } from "node:path";
import { acpDriver } from "./acp.js";
import { AGENT_TOOL_CALL_TIMEOUT_MS, type AgentLaunch, type DriverContext } from "./driver.js";
import { geminiPermission } from "./gemini-permission.js";

export function geminiLaunch(context: DriverContext): AgentLaunch {
  const { name, command, args, env } = context.mcpServer;
  const settings = {
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true },
    mcpServers: { [name]: { command, args, env, trust: true, timeout: AGENT_TOOL_CALL_TIMEOUT_MS } },
  };
  return {
    argv: [...context.command, "--acp", "-m", context.model, ...approvalMode(context), "--skip-trust"],
    env: { GOOGLE_GEMINI_BASE_URL: context.modelBaseUrl, GEMINI_API_KEY: context.modelToken },
    files: [
      {
        path: join(context.home, ".gemini", "settings.json"),
        content: `${JSON.stringify(settings, null, 2)}\n`,
      },
    ],
    ...(context.resume !== undefined ? { keep: [keepChats(context.home)] } : {}),
  };
}

/** Gemini's approval mode: everything allowed, or its default rules that ask. */
function approvalMode(context: DriverContext): string[] {
  return context.approvals === "ask" ? ["--approval-mode", "default"] : ["--yolo"];
}

/**
 * Gemini CLI 0.61 records a conversation in `~/.gemini/tmp/<project>/chats/session-<minute>-<id>.jsonl`
 * and, asked to `session/load` it, first starts a new recording for the same id: in the same
 * minute that is the same file, which it empties before reading it ("No previous sessions
 * found"). A copy under another name keeps the conversation; Gemini picks the copy (it lists
 * every session file, and an emptied one is not resumable) and records on into it.
 */
function keepChats(home: string) {
  return {
    dir: join(home, ".gemini", "tmp", "*", "chats"),
    pattern: "^session-(\\d{4}-.*\\.jsonl)$",
    rename: `session-kept-${Date.now()}-$1`,
  };
}

export const geminiDriver = acpDriver({
  launch: geminiLaunch,
  inlineMcpServer: false,
  permissions: { map: geminiPermission, allowOnceId: "proceed_once" },
});
