/**
 * OpenCode: `opencode acp`. Its config (the file OPENCODE_CONFIG names, in the agent's home) adds
 * the model forwarder as an OpenAI-compatible provider (Chat Completions, bundled with OpenCode,
 * nothing downloaded) whose key is read from a variable, picks the model, and allows every tool
 * (or, when the session's approvals ask, has it ask: `askingPermission`, and reads no config of
 * the workspace's: `IGNORE_WORKSPACE_CONFIG`); the MCP server goes inline in `session/new`. The
 * variables switch off its fetches and updates.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { acpDriver } from "./acp.js";
import type { AgentLaunch, DriverContext, DriverFactory, WorkspaceHazard } from "./driver.js";
import { MODEL_PROVIDER_ID, MODEL_PROVIDER_NAME, MODEL_TOKEN_ENV, openAiBaseUrl } from "./model-endpoint.js";
import { OPENCODE_GUARD_PLUGIN, SERVER_PASSWORD_ENV } from "./opencode-guard.js";
import { opencodeMcpPrefix, opencodePermission } from "./opencode-permission.js";

const NO_PHONING_HOME = {
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
};

/**
 * Asking: the workspace's own OpenCode config is not read, or its rules could allow what ours ask
 * about (they merge after ours and the last matching rule wins: `{"permission":{"b*":"allow"}}` in
 * its `opencode.json` runs every command unasked) and its agents could redefine `build`'s. This
 * skips the project's `opencode.json(c)`, its `.opencode/` directories (config, agents, commands,
 * plugins) and its instruction files (AGENTS.md comes back through the config's `instructions`).
 * See docs/approval-hooks.md, "Settings an agent or repository could use to stop asking".
 */
const IGNORE_WORKSPACE_CONFIG = { OPENCODE_DISABLE_PROJECT_CONFIG: "1" };

/**
 * Asking: what OpenCode's newer config layer reads from the project whatever
 * OPENCODE_DISABLE_PROJECT_CONFIG says — plugins (code it imports and runs, which could answer its
 * permission questions) in `.opencode/plugin(s)/` and npm plugins a project config names
 * (docs/approval-hooks.md). The agent does not start while one is there.
 */
const OPENCODE_HAZARDS: WorkspaceHazard[] = [
  ...[".opencode/plugin", ".opencode/plugins"].map((dir) => ({
    dir,
    name: "\\.[cm]?[jt]sx?$",
    why: "OpenCode imports and runs this plugin, which could answer its permission questions",
  })),
  ...["", ".opencode"].map((dir) => ({
    dir,
    name: "^opencode\\.jsonc?$",
    content: '"plugins?"\\s*:',
    why: "OpenCode installs and runs the plugins it names, which could answer its permission questions",
  })),
];

/**
 * Asking: the CLI's user config in the agent's home, which it reads whatever the flag above says
 * (config files, agents, plugins): removed before each start, so nothing the agent wrote there counts.
 */
function ownUserConfig(home: string): string[] {
  return [join(home, ".config", "opencode"), join(home, ".opencode")];
}

/**
 * OpenCode's permission rules when the session's approvals ask. The last matching rule wins, and
 * its built-in rules come first (`"*": "allow"`, `doom_loop` and `external_directory` ask except
 * its own temporary directories, `.env` reads ask), so these add: shell commands, edits (edit,
 * write, apply_patch), web fetches and searches ask, a repeated identical call asks, and the tools
 * of our own MCP server (`oubliette_<tool>`) never ask (the session gates them itself). No `"*"`
 * rule: one would override the built-in ones that ask.
 */
function askingPermission(serverName: string): Record<string, string> {
  return {
    bash: "ask",
    edit: "ask",
    webfetch: "ask",
    websearch: "ask",
    doom_loop: "ask",
    [`${opencodeMcpPrefix(serverName)}*`]: "allow",
  };
}

/**
 * OpenCode serves its own HTTP API on a loopback port, which every process in the container can
 * reach (one network namespace): without a password another session could drive this one. The
 * password is the session's alone (in this agent's environment, which only its uid can read);
 * asking, the guard plugin also keeps it from the commands OpenCode runs (opencode-guard.ts).
 */
function serverPassword(): string {
  return randomBytes(24).toString("hex");
}

export function opencodeLaunch(context: DriverContext): AgentLaunch {
  const configPath = join(context.home, ".config", "oubliette", "opencode.json");
  const guardPath = join(context.home, ".config", "oubliette", "opencode-guard.js");
  const config = {
    model: `${MODEL_PROVIDER_ID}/${context.model}`,
    provider: {
      [MODEL_PROVIDER_ID]: {
        npm: "@ai-sdk/openai-compatible",
        name: MODEL_PROVIDER_NAME,
        options: { baseURL: openAiBaseUrl(context), apiKey: `{env:${MODEL_TOKEN_ENV}}` },
        models: { [context.model]: { name: context.model } },
      },
    },
    ...(context.approvals === "ask"
      ? // A denied call otherwise ends the turn (OpenCode's `shouldBreak`); the model is told and goes on.
        {
          permission: askingPermission(context.mcpServer.name),
          experimental: { continue_loop_on_deny: true },
          // The workspace's AGENTS.md, which OPENCODE_DISABLE_PROJECT_CONFIG leaves out.
          instructions: [join(context.cwd, "AGENTS.md")],
          plugin: [pathToFileURL(guardPath).href],
        }
      : { permission: { "*": "allow" } }),
  };
  return {
    argv: [...context.command, "acp"],
    env: {
      ...NO_PHONING_HOME,
      OPENCODE_CONFIG: configPath,
      [SERVER_PASSWORD_ENV]: serverPassword(),
      [MODEL_TOKEN_ENV]: context.modelToken,
      ...(context.approvals === "ask" ? IGNORE_WORKSPACE_CONFIG : {}),
    },
    files: [
      { path: configPath, content: `${JSON.stringify(config, null, 2)}\n` },
      ...(context.approvals === "ask" ? [{ path: guardPath, content: OPENCODE_GUARD_PLUGIN }] : []),
    ],
    ...(context.approvals === "ask" ? { clear: ownUserConfig(context.home), hazards: OPENCODE_HAZARDS } : {}),
  };
}

const acpOpencode = acpDriver({
  launch: opencodeLaunch,
  inlineMcpServer: true,
  permissions: { map: opencodePermission, allowOnceId: "once" },
});

/**
 * Asking, our MCP server goes without the server password: OpenCode starts it with its own
 * environment (plus the server's) before the guard takes the password out of that (its first
 * prompt), and it lives as long as OpenCode, where a command of the same uid could read it.
 */
export const opencodeDriver: DriverFactory = (context) =>
  acpOpencode(
    context.approvals === "ask"
      ? {
          ...context,
          mcpServer: { ...context.mcpServer, env: { ...context.mcpServer.env, [SERVER_PASSWORD_ENV]: "" } },
        }
      : context,
  );
