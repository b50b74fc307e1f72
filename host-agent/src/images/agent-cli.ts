/**
 * The agent CLIs as protocol/agent-runtimes.ts pins them: fetched into the package cache
 * (package-cache.ts, `<cache>/<runtime>-<version>/`), checked on this machine with `--version`,
 * and laid out under /opt/agents/<runtime>/ where each `command` expects them. Where each package
 * keeps the thing that runs is said once, in CLI_LAYOUTS.
 */
import { existsSync } from "node:fs";
import { join, posix } from "node:path";
import { AGENTS_DIR, CLI_RUNTIMES, type CliRuntime } from "../../../protocol/agent-runtimes.js";
import { hostTree, type TreeEntry } from "./build-context.js";
import { DockerImageError } from "./errors.js";
import {
  fetchPinned,
  PACKAGE_CACHE,
  type PinnedPackage,
  packageSpec,
  versionOnHost,
} from "./package-cache.js";

export type CliRuntimeName = keyof typeof CLI_RUNTIMES;
export const CLI_RUNTIME_NAMES = Object.keys(CLI_RUNTIMES) as CliRuntimeName[];

/** What of an installed package goes into the image, relative to the npm prefix it was installed in. */
interface CliLayout {
  /** Copied to /opt/agents/<runtime>/<to>: a file, or a directory without the `skip` paths. */
  copy: { from: string; to: string; skip?: readonly string[] };
  /** Dynamically linked files (prefix-relative) whose shared libraries the image must also hold. */
  linked: readonly string[];
}

/**
 * Only the platform binaries are copied, never npm's launchers: the launchers are Node scripts
 * that look for the binary in node_modules (and Claude's and OpenCode's fail with --ignore-scripts).
 * linux-x64 glibc only, as this machine (Codex ships static musl binaries).
 */
const CLI_LAYOUTS: Readonly<Record<CliRuntimeName, CliLayout>> = {
  // Bun-compiled, needs libc, libpthread, libdl, libm.
  droid: {
    copy: { from: "node_modules/@factory/cli-linux-x64/bin/droid", to: "droid" },
    linked: ["node_modules/@factory/cli-linux-x64/bin/droid"],
  },
  // Bun-compiled; also needs librt.
  claude: {
    copy: { from: "node_modules/@anthropic-ai/claude-code-linux-x64/claude", to: "claude" },
    linked: ["node_modules/@anthropic-ai/claude-code-linux-x64/claude"],
  },
  // The package root that codex-package.json describes: bin/codex finds codex-path/rg,
  // codex-resources/bwrap and bin/codex-code-mode-host beside itself. The voice helper (51 MB of
  // GStreamer) is left out: headless sessions never talk.
  codex: {
    copy: {
      from: "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl",
      to: ".",
      skip: ["codex-resources/voice"],
    },
    linked: [],
  },
  opencode: {
    copy: { from: "node_modules/opencode-linux-x64/bin/opencode", to: "opencode" },
    linked: ["node_modules/opencode-linux-x64/bin/opencode"],
  },
  // A JS bundle that imports its optional native helpers (node-pty) from node_modules.
  gemini: {
    copy: { from: "node_modules", to: "node_modules", skip: [".bin", ".package-lock.json"] },
    linked: ["node_modules/@lydell/node-pty-linux-x64/pty.node"],
  },
};

/** A fetched CLI: the npm prefix it is installed in and what of it goes into the image. */
export interface AgentCliFiles {
  runtime: CliRuntimeName;
  dir: string;
  /** Entries under /opt/agents/<runtime>/. */
  entries: TreeEntry[];
  /** Host paths of the dynamically linked files among them. */
  linked: string[];
}

/** `<package>@<version>` as npm takes it. */
export function cliSpec(runtime: CliRuntimeName): string {
  return packageSpec(cliPin(runtime));
}

function cliPin(runtime: CliRuntimeName): PinnedPackage {
  const { package: name, version } = CLI_RUNTIMES[runtime];
  return { name: runtime, package: name, version };
}

/** A stable description of the layout, for image content hashes. */
export function cliLayoutKey(runtime: CliRuntimeName): string {
  return JSON.stringify({
    spec: cliSpec(runtime),
    command: CLI_RUNTIMES[runtime].command,
    ...CLI_LAYOUTS[runtime],
  });
}

/** Fetches the runtime's CLI unless it is already cached; returns its files. */
export async function fetchAgentCli(
  runtime: CliRuntimeName,
  log: (line: string) => void,
  cacheDir: string = PACKAGE_CACHE,
): Promise<AgentCliFiles> {
  const cli = CLI_RUNTIMES[runtime];
  const dir = await fetchPinned(cliPin(runtime), cacheDir, log, {
    linuxX64: true,
    // Run from where the image will have it.
    check: (installed) => {
      const files = cliFiles(runtime, installed);
      const toHost = (imagePath: string) => {
        const entry = files.entries.find((e) => e.path === imagePath);
        return entry?.kind === "file" ? entry.hostPath : imagePath;
      };
      return versionOnHost(cliSpec(runtime), cli.command.map(toHost), cli.version, installed);
    },
  });
  return cliFiles(runtime, dir);
}

/** The entries of the runtime's layout in `dir`; throws when the package is not laid out as expected. */
function cliFiles(runtime: CliRuntimeName, dir: string): AgentCliFiles {
  const layout = CLI_LAYOUTS[runtime];
  const from = join(dir, layout.copy.from);
  if (!existsSync(from)) {
    throw new DockerImageError(
      "cli_layout",
      `${cliSpec(runtime)} has no ${layout.copy.from}; the package layout changed (see CLI_LAYOUTS)`,
    );
  }
  const to = posix.join(AGENTS_DIR, runtime, layout.copy.to);
  const entries = hostTree(to, from, layout.copy.skip);
  const program = programPath(CLI_RUNTIMES[runtime]);
  if (!entries.some((entry) => entry.kind === "file" && entry.path === program)) {
    throw new DockerImageError("cli_layout", `the ${runtime} image would have no ${program}, its command`);
  }
  return { runtime, dir, entries, linked: layout.linked.map((path) => join(dir, path)) };
}

/** The file a runtime's command runs: its first word, or the script after `node`. */
export function programPath(cli: CliRuntime): string {
  const [first, second] = cli.command;
  const program = first === "node" ? second : first;
  if (program === undefined) throw new DockerImageError("cli_layout", "an agent command is empty");
  return program;
}
