/**
 * Gemini CLI: `gemini --acp -m <model> --yolo --skip-trust` (always an explicit model: without one
 * its router makes extra calls and retries for a long time); when the session's approvals ask,
 * `--approval-mode default` instead of `--yolo`, so its policy asks (over ACP) before a shell
 * command, a file write or edit, a web fetch or a skill (`gemini-permission.ts`), while our own
 * MCP server, trusted, never asks, and no settings of the workspace's can let those run unasked
 * (`ownPolicies`). The model forwarder is its Gemini API base URL, the placeholder credential its
 * API key; `~/.gemini/settings.json` in the agent's home picks API-key auth, switches off usage
 * statistics, telemetry and updates, and holds the MCP server (trusted, its calls allowed to run
 * as long as Oubliette's own deadlines let them), as the recorded session had it.
 */
import { join } from "node:path";
import { acpDriver } from "./acp.js";
import {
  AGENT_TOOL_CALL_TIMEOUT_MS,
  type AgentLaunch,
  type DriverContext,
  type WorkspaceHazard,
} from "./driver.js";
import { geminiPermission } from "./gemini-permission.js";

export function geminiLaunch(context: DriverContext): AgentLaunch {
  const { name, command, args, env } = context.mcpServer;
  const settings = {
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true },
    mcpServers: { [name]: { command, args, env, trust: true, timeout: AGENT_TOOL_CALL_TIMEOUT_MS } },
    ...(context.approvals === "ask" ? IGNORE_WORKSPACE_ENV : {}),
  };
  const asking = context.approvals === "ask";
  return {
    argv: [
      ...context.command,
      "--acp",
      "-m",
      context.model,
      ...approvalMode(context),
      ...(asking ? ownPolicies(context) : []),
      "--skip-trust",
    ],
    env: { GOOGLE_GEMINI_BASE_URL: context.modelBaseUrl, GEMINI_API_KEY: context.modelToken },
    files: [
      {
        path: join(context.home, ".gemini", "settings.json"),
        content: `${JSON.stringify(settings, null, 2)}\n`,
      },
      ...(asking ? [{ path: askingPolicyPath(context), content: ASKING_POLICY }] : []),
    ],
    ...(context.resume !== undefined ? { keep: [keepChats(context.home)] } : {}),
    ...(asking
      ? {
          clear: [
            join(context.home, ".gemini", ".env"),
            join(context.home, ".env"),
            join(context.home, ".gemini", "extensions"),
          ],
          hazards: GEMINI_HAZARDS,
        }
      : {}),
  };
}

/**
 * Asking: no `.env` of the workspace's (nor of a directory above it) sets Gemini's environment.
 * Gemini loads the first it finds walking up from the workspace into its own environment once it
 * reads the folder as trusted (past its ten-second settings cache): its own variables (which model,
 * which settings files, where it sends requests) and what the programs it starts read
 * (NODE_OPTIONS, PATH), our MCP server included. Its `--ignore-env` would say so but 0.61 refuses
 * the argument; the setting does the same, and a workspace setting that could undo it refuses the
 * start (GEMINI_HAZARDS). Its own `.gemini/.env` it loads whatever this says: a hazard too.
 */
const IGNORE_WORKSPACE_ENV = { advanced: { ignoreLocalEnv: true } };

/** A line of a `.env` file that sets a variable (as dotenv reads it: `[export] NAME=…` or `NAME: …`). */
const DOTENV_ASSIGNMENT = "(^|\\n)[ \\t]*(export[ \\t]+)?[\\w.-]+([ \\t]*=|:[ \\t])";

/**
 * Asking: workspace settings Gemini obeys once it reads them as trusted (past its ten-second
 * settings cache) that our flags cannot outrank: a `tools.discoveryCommand` (run at session
 * start), `hooks`, and an `mcpServers.oubliette` entry (which replaces our server and runs its
 * command), or `advanced.ignoreLocalEnv` (which would undo IGNORE_WORKSPACE_ENV). The agent does
 * not start while the workspace's `.gemini/settings.json` has one, nor while its `.gemini/.env`
 * sets a variable: Gemini loads that file (trusted, past the same cache) into its own environment
 * whatever `ignoreLocalEnv` says, and its children inherit it. In the agent's
 * home, `~/.gemini/.env`, `~/.env` (Gemini's last fallback) and extensions (not rewritten at
 * launch) are removed before each start.
 */
const GEMINI_HAZARDS: WorkspaceHazard[] = [
  {
    dir: ".gemini",
    name: "^settings\\.json$",
    content: '"(discoveryCommand|hooks|oubliette)"\\s*:',
    why: "Gemini would run commands it names (a tool discovery command, hooks, or a server in place of ours) without asking",
  },
  {
    dir: ".gemini",
    name: "^settings\\.json$",
    content: '"ignoreLocalEnv"\\s*:',
    why: "Gemini would let the workspace's .env files set its own environment again",
  },
  {
    dir: ".gemini",
    name: "^\\.env$",
    content: DOTENV_ASSIGNMENT,
    why:
      "Gemini would set its own environment from it (its settings, and what the programs it starts read: " +
      "NODE_OPTIONS, PATH…), which no switch turns off",
  },
];

/**
 * Asking: no policy or settings of the workspace's (nor of the agent's own home) can let a tool
 * run unasked. The folder stays trusted (`--skip-trust`: Gemini starts no stdio MCP server, ours
 * included, in a folder it does not trust), so the workspace's `.gemini/settings.json` counts
 * whenever Gemini reads it as trusted (0.61 does once its first, untrusted reading of it is over
 * ten seconds old). The flags replace what its settings could add: `--policy` names the usual
 * user policy directory in place of its `policyPaths`, `--admin-policy` our own rules in place of
 * its `adminPolicyPaths`, and `--allowed-mcp-server-names` lets only our server connect (no server
 * of its own starts or has trusted tools). Our rules, at the admin tier, keep Gemini's default
 * questions asked whatever a lower tier allows: its `tools.allowed`, user or workspace policies.
 * See docs/approval-hooks.md, "Settings an agent or repository could use to stop asking".
 */
function ownPolicies(context: DriverContext): string[] {
  return [
    "--policy",
    join(context.home, ".gemini", "policies"),
    "--admin-policy",
    askingPolicyPath(context),
    "--allowed-mcp-server-names",
    context.mcpServer.name,
  ];
}

function askingPolicyPath(context: DriverContext): string {
  return join(context.home, ".gemini", "oubliette-asking.toml");
}

/**
 * The tools Gemini 0.61's default policy asks about (`policies/write.toml`, `discovered.toml`),
 * asked about at the admin tier in the modes that would otherwise allow them; plan mode keeps its
 * own rules.
 */
const ASKING_POLICY = `# Oubliette, under a policy that asks: these tools always ask.
[[rule]]
toolName = ["run_shell_command", "write_file", "replace", "web_fetch", "activate_skill", "discovered_tool_*"]
decision = "ask_user"
priority = 999
modes = ["default", "autoEdit", "yolo"]
interactive = true
`;

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
