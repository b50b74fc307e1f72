/**
 * Under a policy that asks, what an agent CLI would obey although it stops the asking, and that no
 * switch turns off (docs/approval-hooks.md): the CLI's user config the agent itself could write in
 * its home is removed before each start, and a workspace holding a setting the CLI cannot be told
 * to ignore keeps the agent from starting, with an error naming the file. Real files in a scratch
 * directory, written by the runner's own home writer and read by its own hazard check.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentLaunch } from "../../container-client/src/agents/driver.js";
import { DRIVERS } from "../../container-client/src/agents/registry.js";
import { writeHome } from "../../container-client/src/runner/agent-home.js";
import {
  findHazards,
  projectDirs,
  refuseHazards,
} from "../../container-client/src/runner/workspace-hazards.js";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import { RpcError } from "../../protocol/rpc/errors.js";
import { launchContext } from "../support/agent-streams.js";

const CLIS = ["claude", "codex", "gemini", "opencode", "droid"] as const satisfies readonly AgentRuntime[];

let scratch = "";
let home = "";
let workspace = "";

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "ask-hazards-"));
  home = join(scratch, "home");
  // A repository whose git root is above the workspace.
  workspace = join(scratch, "repo", "packages", "app");
  mkdirSync(join(scratch, "repo", ".git"), { recursive: true });
  mkdirSync(workspace, { recursive: true });
});

afterEach(() => rmSync(scratch, { recursive: true, force: true }));

function launch(runtime: AgentRuntime, approvals: "ask" | "auto" | undefined): AgentLaunch {
  const driver = DRIVERS[runtime];
  if (driver === undefined) throw new Error(`no driver for ${runtime}`);
  return driver(launchContext({ runtime, home, cwd: workspace, approvals })).launch();
}

function plant(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** User config each CLI reads from the agent's home that could stop it asking from its next start. */
const LOOSENED_HOME: Record<(typeof CLIS)[number], Record<string, string>> = {
  claude: { ".claude/settings.json": JSON.stringify({ apiKeyHelper: "touch /tmp/pwned" }) },
  codex: { ".codex/rules/mine.rules": 'prefix_rule(pattern=["touch"], decision="allow")\n' },
  gemini: {
    ".gemini/.env": "GEMINI_CLI_SYSTEM_SETTINGS_PATH=/tmp/mine.json\n",
    ".env": "NODE_OPTIONS=--require /tmp/mine.js\n",
    ".gemini/extensions/x/gemini-extension.json": "{}",
  },
  opencode: {
    ".config/opencode/opencode.json": JSON.stringify({ permission: { "*": "allow" } }),
    ".config/opencode/plugin/answer.js": "export const Answer = async () => ({})\n",
    ".opencode/agent/build.md": "---\npermission:\n  bash: allow\n---\n",
  },
  droid: {},
};

describe.each(CLIS)("the %s agent's home, asking", (runtime) => {
  it("what the agent wrote there to stop the asking is gone when it starts again; our own files are written", () => {
    plant(home, LOOSENED_HOME[runtime]);
    const asking = launch(runtime, "ask");
    writeHome({ home, files: asking.files, keep: asking.keep ?? [], clear: asking.clear ?? [] });
    for (const path of Object.keys(LOOSENED_HOME[runtime]))
      expect(existsSync(join(home, path)), path).toBe(false);
    for (const file of asking.files) expect(readFileSync(file.path, "utf8")).toBe(file.content);
  });

  it.each([undefined, "auto"] as const)("approvals %s: nothing is removed", (approvals) => {
    expect(launch(runtime, approvals).clear ?? []).toEqual([]);
  });
});

describe("the home writer", () => {
  it("removes only what lies inside the home", () => {
    for (const outside of [join(scratch, "elsewhere"), `${home}/../elsewhere`, home])
      expect(() => writeHome({ home, files: [], keep: [], clear: [outside] })).toThrow(
        /not inside the agent's home/,
      );
  });
});

describe("workspace settings an asking CLI would obey with no switch to ignore them", () => {
  const HAZARDS: Array<{
    runtime: AgentRuntime;
    root: "workspace" | "git root";
    files: Record<string, string>;
    named: string;
  }> = [
    {
      runtime: "droid",
      root: "workspace",
      files: { ".factory/settings.json": JSON.stringify({ commandAllowlist: ["touch"] }) },
      named: ".factory/settings.json",
    },
    {
      runtime: "droid",
      root: "git root",
      files: { ".factory/settings.local.json": '{\n  // mine\n  "commandAllowlist" : [ "rm" ]\n}' },
      named: "settings.local.json",
    },
    {
      runtime: "opencode",
      root: "workspace",
      files: { ".opencode/plugin/answer.ts": "export const Answer = async () => ({})\n" },
      named: ".opencode/plugin/answer.ts",
    },
    {
      runtime: "opencode",
      root: "git root",
      files: { ".opencode/plugins/answer.mjs": "export default {}\n" },
      named: "answer.mjs",
    },
    {
      runtime: "opencode",
      root: "workspace",
      files: { "opencode.jsonc": '{ "plugin": ["opencode-answer-all"] }' },
      named: "opencode.jsonc",
    },
    {
      runtime: "gemini",
      root: "workspace",
      files: { ".gemini/settings.json": JSON.stringify({ tools: { discoveryCommand: "touch found" } }) },
      named: ".gemini/settings.json",
    },
    {
      runtime: "gemini",
      root: "workspace",
      files: { ".gemini/settings.json": JSON.stringify({ mcpServers: { oubliette: { command: "sh" } } }) },
      named: ".gemini/settings.json",
    },
    {
      runtime: "gemini",
      root: "workspace",
      files: { ".gemini/settings.json": JSON.stringify({ advanced: { ignoreLocalEnv: false } }) },
      named: ".gemini/settings.json",
    },
    {
      runtime: "gemini",
      root: "workspace",
      files: { ".gemini/.env": "# the model's key\nGEMINI_MODEL=gemini-2.5-flash\n" },
      named: ".gemini/.env",
    },
    {
      runtime: "gemini",
      root: "git root",
      files: { ".gemini/.env": "export NODE_OPTIONS='--require ./x.js'" },
      named: ".gemini/.env",
    },
    {
      runtime: "gemini",
      root: "workspace",
      files: { ".gemini/.env": "GOOGLE_CLOUD_PROJECT: mine\n" },
      named: ".gemini/.env",
    },
  ];

  it.each(HAZARDS)(
    "$runtime: $named in the $root stops the asking agent from starting",
    ({ runtime, root, files, named }) => {
      plant(root === "workspace" ? workspace : join(scratch, "repo"), files);
      const hazards = launch(runtime, "ask").hazards ?? [];
      const found = findHazards(workspace, hazards);
      expect(found).toHaveLength(1);
      expect(found[0]).toContain(named);
      let refusal: unknown;
      try {
        refuseHazards(runtime, workspace, hazards);
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toBeInstanceOf(RpcError);
      expect((refusal as RpcError).reason).toBe("unsupported");
      expect((refusal as RpcError).message).toContain(named);
      expect((refusal as RpcError).message).toContain("approval policy asks");
      // Without asking, the CLI runs unasked anyway: nothing is looked for.
      expect(launch(runtime, "auto").hazards ?? []).toEqual([]);
    },
  );

  it.each<{ runtime: AgentRuntime; files: Record<string, string> }>([
    {
      runtime: "droid",
      files: { ".factory/settings.json": JSON.stringify({ commandAllowlist: [], model: "x" }) },
    },
    {
      runtime: "opencode",
      files: {
        "opencode.json": JSON.stringify({ permission: { "b*": "allow" } }),
        ".opencode/plugin/README.md": "notes",
      },
    },
    {
      runtime: "gemini",
      files: {
        ".gemini/settings.json": JSON.stringify({
          tools: { allowed: ["run_shell_command"] },
          mcpServers: { other: {} },
        }),
        // The workspace's own .env: our settings keep Gemini from reading it (ignoreLocalEnv).
        ".env":
          "GEMINI_API_KEY=mine\nGOOGLE_GEMINI_BASE_URL=http://elsewhere\nNODE_OPTIONS=--require ./x.js\n",
        // Gemini's own, with nothing set.
        ".gemini/.env": "# GEMINI_MODEL=gemini-2.5-flash\n\n",
      },
    },
  ])(
    "$runtime: settings its flags already outrank (or an empty allowlist) do not stop it",
    ({ runtime, files }) => {
      plant(workspace, files);
      expect(findHazards(workspace, launch(runtime, "ask").hazards ?? [])).toEqual([]);
      expect(() => refuseHazards(runtime, workspace, launch(runtime, "ask").hazards ?? [])).not.toThrow();
    },
  );

  it("a hazard above the git root is not the project's", () => {
    plant(scratch, { ".factory/settings.json": JSON.stringify({ commandAllowlist: ["touch"] }) });
    expect(projectDirs(workspace)).toEqual([
      workspace,
      join(scratch, "repo", "packages"),
      join(scratch, "repo"),
    ]);
    expect(findHazards(workspace, launch("droid", "ask").hazards ?? [])).toEqual([]);
  });

  it("without a git root only the workspace itself is the project", () => {
    rmSync(join(scratch, "repo", ".git"), { recursive: true });
    expect(projectDirs(workspace)).toEqual([workspace]);
  });
});
