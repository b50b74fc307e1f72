/**
 * How Codex starts: `codex app-server`, with its own CODEX_HOME in the agent's home whose
 * `config.toml` names the model forwarder as the provider (Responses API, key from a variable),
 * the container-client as the `oubliette` MCP server (its calls allowed to run as long as
 * Oubliette's own deadlines let them), no sandbox of its own (the container is the sandbox), no
 * approvals unless the session asks (`untrusted`: Codex asks, the driver puts each question to the
 * session, and no project config can say otherwise: `untrustedProjects`) and every switch that
 * keeps it from calling home.
 */
import { dirname, join } from "node:path";
import {
  AGENT_MCP_STARTUP_TIMEOUT_MS,
  AGENT_TOOL_CALL_TIMEOUT_MS,
  type AgentLaunch,
  type DriverContext,
} from "./driver.js";
import { MODEL_PROVIDER_ID, MODEL_PROVIDER_NAME, MODEL_TOKEN_ENV, openAiBaseUrl } from "./model-endpoint.js";
import { stringifyToml, type TomlTable } from "./toml.js";

export function codexLaunch(context: DriverContext): AgentLaunch {
  const codexHome = join(context.home, ".codex");
  const { name, command, args, env } = context.mcpServer;
  const config: TomlTable = {
    model: context.model,
    model_provider: MODEL_PROVIDER_ID,
    // Ask mode: the thread asks (thread/start's `untrusted`, which 0.169 refuses here); this is
    // only what anything not started from the thread falls back to, and still asks for escalations.
    approval_policy: context.approvals === "ask" ? "on-request" : "never",
    sandbox_mode: "danger-full-access",
    check_for_update_on_startup: false,
    web_search: "disabled",
    model_providers: {
      [MODEL_PROVIDER_ID]: {
        name: MODEL_PROVIDER_NAME,
        base_url: openAiBaseUrl(context),
        env_key: MODEL_TOKEN_ENV,
        wire_api: "responses",
      },
    },
    analytics: { enabled: false },
    features: { plugins: false, apps: false },
    mcp_servers: {
      [name]: {
        command,
        args,
        env,
        startup_timeout_sec: AGENT_MCP_STARTUP_TIMEOUT_MS / 1000,
        tool_timeout_sec: AGENT_TOOL_CALL_TIMEOUT_MS / 1000,
      },
    },
    ...(context.approvals === "ask" ? { projects: untrustedProjects(context.cwd) } : {}),
  };
  return {
    argv: [...context.command, "app-server"],
    env: { CODEX_HOME: codexHome, [MODEL_TOKEN_ENV]: context.modelToken },
    files: [{ path: join(codexHome, "config.toml"), content: stringifyToml(config) }],
    // Asking: the user's exec policy, where an allow rule the agent wrote would count from its next start.
    ...(context.approvals === "ask" ? { clear: [join(codexHome, "rules")] } : {}),
  };
}

/**
 * Asking: the workspace and every directory above it marked untrusted, so Codex reads none of the
 * project's `.codex/` (its project root is the workspace or the git root above it). Not yet
 * trusted is not enough in 0.169: a `.codex/rules/*.rules` `prefix_rule(…, decision="allow")`
 * there still lets matching commands run unasked; marked untrusted, neither its rules nor its
 * config count (nor, a cost, its AGENTS.md). See docs/approval-hooks.md, "Settings an agent or
 * repository could use to stop asking".
 */
function untrustedProjects(cwd: string): TomlTable {
  const projects: TomlTable = {};
  for (let dir = cwd; ; dir = dirname(dir)) {
    projects[dir] = { trust_level: "untrusted" };
    if (dirname(dir) === dir) return projects;
  }
}
