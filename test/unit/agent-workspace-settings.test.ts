/**
 * Under a policy that asks, no settings of the workspace's can make an agent CLI stop asking
 * (docs/approval-hooks.md, "Settings an agent or repository could use to stop asking"): each
 * asking launch carries the CLI's own switch for that, and the automatic launch carries none.
 */
import { describe, expect, it } from "vitest";
import { claudeDriver } from "../../container-client/src/agents/claude.js";
import { codexDriver } from "../../container-client/src/agents/codex.js";
import type { AgentLaunch, DriverContext } from "../../container-client/src/agents/driver.js";
import { geminiDriver } from "../../container-client/src/agents/gemini.js";
import { opencodeDriver } from "../../container-client/src/agents/opencode.js";
import { OPENCODE_GUARD_PLUGIN } from "../../container-client/src/agents/opencode-guard.js";
import { launchContext } from "../support/agent-streams.js";

const WORKSPACE = "/workspace/default";
const HOME = "/tmp/oubliette-agents/ses_0123456789abcdef01234567";

function context(runtime: DriverContext["runtime"], approvals?: "ask" | "auto", serverName = "oubliette") {
  const base = launchContext({ runtime, cwd: WORKSPACE, home: HOME });
  return { ...base, approvals, mcpServer: { ...base.mcpServer, name: serverName } };
}

/** The argument after `flag` (and that the flag is there once). */
function argAfter(argv: readonly string[], flag: string): string | undefined {
  expect(argv.filter((a) => a === flag)).toHaveLength(1);
  return argv[argv.indexOf(flag) + 1];
}

const AUTO_MODES = [undefined, "auto"] as const;

describe("Claude Code asking: only our own settings", () => {
  it("reads no settings file, only our managed settings, and the workspace's CLAUDE.md as an added directory's", () => {
    const launch = claudeDriver(context("claude", "ask")).launch();
    // Not even the agent's own ~/.claude/settings.json, which Claude Code re-reads while it runs.
    expect(launch.argv.filter((a) => a.startsWith("--setting-sources"))).toEqual(["--setting-sources="]);
    expect(JSON.parse(argAfter(launch.argv, "--managed-settings") ?? "")).toEqual({
      allowManagedPermissionRulesOnly: true,
      allowManagedHooksOnly: true,
      permissions: { allow: ["mcp__oubliette"], disableBypassPermissionsMode: "disable" },
    });
    expect(argAfter(launch.argv, "--add-dir")).toBe(WORKSPACE);
    // --add-dir takes every argument up to the next option.
    expect(launch.argv[launch.argv.indexOf("--add-dir") + 2]?.startsWith("--")).toBe(true);
    expect(launch.env.CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD).toBe("1");
    // Before the permission flags, whose --allowedTools takes what follows it.
    expect(launch.argv.indexOf("--add-dir")).toBeLessThan(launch.argv.indexOf("--permission-mode"));
  });

  it("allows the tools of the server the context names in the managed settings", () => {
    const argv = claudeDriver(context("claude", "ask", "ours")).launch().argv;
    expect(JSON.parse(argAfter(argv, "--managed-settings") ?? "").permissions.allow).toEqual(["mcp__ours"]);
  });

  it.each(AUTO_MODES)("approvals %s: none of it", (approvals) => {
    const launch = claudeDriver(context("claude", approvals)).launch();
    for (const flag of ["--setting-sources=", "--managed-settings", "--add-dir"])
      expect(launch.argv).not.toContain(flag);
    expect(launch.env).not.toHaveProperty("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD");
  });
});

describe("OpenCode asking: no project config", () => {
  const config = (launch: AgentLaunch) => JSON.parse(launch.files[0]?.content ?? "");

  it("skips the workspace's opencode.json and .opencode/, and reads its AGENTS.md through our config", () => {
    const launch = opencodeDriver(context("opencode", "ask")).launch();
    expect(launch.env.OPENCODE_DISABLE_PROJECT_CONFIG).toBe("1");
    expect(config(launch).instructions).toEqual([`${WORKSPACE}/AGENTS.md`]);
  });

  it("loads the guard that keeps its server password from its commands, from a file written with the config", () => {
    const launch = opencodeDriver(context("opencode", "ask")).launch();
    const guard = `${HOME}/.config/oubliette/opencode-guard.js`;
    expect(config(launch).plugin).toEqual([`file://${guard}`]);
    expect(launch.files.find((f) => f.path === guard)?.content).toBe(OPENCODE_GUARD_PLUGIN);
  });

  it.each(AUTO_MODES)("approvals %s: none of it", (approvals) => {
    const launch = opencodeDriver(context("opencode", approvals)).launch();
    expect(launch.env).not.toHaveProperty("OPENCODE_DISABLE_PROJECT_CONFIG");
    expect(config(launch)).not.toHaveProperty("instructions");
    expect(config(launch)).not.toHaveProperty("plugin");
    expect(launch.files).toHaveLength(1);
  });
});

describe("Gemini CLI asking: our policies over the workspace's", () => {
  const policyFile = `${HOME}/.gemini/oubliette-asking.toml`;

  it("replaces the settings' policy paths and MCP servers, and asks at the admin tier", () => {
    const launch = geminiDriver(context("gemini", "ask")).launch();
    expect(argAfter(launch.argv, "--policy")).toBe(`${HOME}/.gemini/policies`);
    expect(argAfter(launch.argv, "--admin-policy")).toBe(policyFile);
    expect(argAfter(launch.argv, "--allowed-mcp-server-names")).toBe("oubliette");
    // Still trusted: Gemini starts no stdio MCP server (ours) in a folder it does not trust.
    expect(launch.argv.at(-1)).toBe("--skip-trust");
    const policy = launch.files.find((f) => f.path === policyFile)?.content ?? "";
    expect(policy).toContain('decision = "ask_user"');
    for (const tool of ["run_shell_command", "write_file", "replace", "web_fetch", "activate_skill"])
      expect(policy).toContain(`"${tool}"`);
    expect(policy).not.toContain("plan");
  });

  it("reads no .env of the workspace's", () => {
    const launch = geminiDriver(context("gemini", "ask")).launch();
    const settings = JSON.parse(
      launch.files.find((f) => f.path === `${HOME}/.gemini/settings.json`)?.content ?? "",
    );
    expect(settings.advanced).toEqual({ ignoreLocalEnv: true });
  });

  it("lets only the server the context names connect", () => {
    const argv = geminiDriver(context("gemini", "ask", "ours")).launch().argv;
    expect(argAfter(argv, "--allowed-mcp-server-names")).toBe("ours");
  });

  it.each(AUTO_MODES)("approvals %s: none of it", (approvals) => {
    const launch = geminiDriver(context("gemini", approvals)).launch();
    for (const flag of ["--policy", "--admin-policy", "--allowed-mcp-server-names"])
      expect(launch.argv).not.toContain(flag);
    expect(launch.files.map((f) => f.path)).toEqual([`${HOME}/.gemini/settings.json`]);
    expect(JSON.parse(launch.files[0]?.content ?? "")).not.toHaveProperty("advanced");
  });
});

describe("Codex asking: no project .codex/", () => {
  it("marks the workspace and every directory above it untrusted", () => {
    const config = codexDriver(context("codex", "ask")).launch().files[0]?.content ?? "";
    for (const dir of ["/workspace/default", "/workspace", "/"])
      expect(config).toContain(`[projects.${JSON.stringify(dir)}]\ntrust_level = "untrusted"\n`);
    expect(config.match(/\[projects\./g)).toHaveLength(3);
  });

  it.each(AUTO_MODES)("approvals %s: none of it", (approvals) => {
    const config = codexDriver(context("codex", approvals)).launch().files[0]?.content ?? "";
    expect(config).not.toContain("[projects.");
    expect(config).not.toContain("trust_level");
  });
});
