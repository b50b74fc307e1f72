/**
 * The agent CLIs as protocol/agent-runtimes.ts pins them: fetched from the npm registry (the only
 * one reachable) into `<cache>/<runtime>-<version>/` (AGENT_CLI_CACHE), checked on this
 * machine with `--version`, and laid out under /opt/agents/<runtime>/ where each `command` expects
 * them. Where each package keeps the thing that runs is said once, in CLI_LAYOUTS.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AGENTS_DIR, CLI_RUNTIMES, type CliRuntime } from "../../../protocol/agent-runtimes.js";
import { hostTree, type TreeEntry, treeSize } from "./build-context.js";
import { DockerImageError } from "./errors.js";

export type CliRuntimeName = keyof typeof CLI_RUNTIMES;
export const CLI_RUNTIME_NAMES = Object.keys(CLI_RUNTIMES) as CliRuntimeName[];

/**
 * Where fetched CLIs are kept by default: in a source checkout, under its .oubliette/ (which git
 * ignores). The built host-agent passes its own (`images --cache-dir`, under its data directory).
 */
export const AGENT_CLI_CACHE = fileURLToPath(new URL("../../../.oubliette/cache/agent-cli", import.meta.url));
/** Written last into a fetched CLI's directory: without it the directory is fetched again. */
const COMPLETE_MARKER = ".oubliette-complete";

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
  const cli = CLI_RUNTIMES[runtime];
  return `${cli.package}@${cli.version}`;
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
  cacheDir: string = AGENT_CLI_CACHE,
): Promise<AgentCliFiles> {
  const cli = CLI_RUNTIMES[runtime];
  const spec = cliSpec(runtime);
  const dir = join(cacheDir, `${runtime}-${cli.version}`);
  const shown = dir;
  if (existsSync(join(dir, COMPLETE_MARKER))) {
    log(`${spec} is cached in ${shown}; not downloaded`);
    return cliFiles(runtime, dir);
  }
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new DockerImageError(
      "cli_fetch_failed",
      `agent CLI images are made on linux-x64 only, not ${process.platform}-${process.arch}`,
    );
  }
  // A directory without the marker is an interrupted fetch: start over.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  log(`downloading ${spec} from the npm registry into ${shown}`);
  const startedAt = Date.now();
  await npmInstall(spec, dir);
  const files = cliFiles(runtime, dir);
  const version = await versionOnHost(runtime, cli, files, dir);
  const megabytes = treeSize(hostTree("/", join(dir, "node_modules"))) / 1024 / 1024;
  await writeFile(join(dir, COMPLETE_MARKER), `${spec}\n`);
  await removeOtherVersions(runtime, cacheDir, dir, log);
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  log(
    `downloaded ${spec}: ${megabytes.toFixed(0)} MB in ${seconds} s; on this machine --version says "${version}"`,
  );
  return files;
}

/** Deletes the runtime's cached CLIs other than `keep` (earlier pins). */
async function removeOtherVersions(
  runtime: CliRuntimeName,
  cacheDir: string,
  keep: string,
  log: (line: string) => void,
): Promise<void> {
  for (const name of await readdir(cacheDir)) {
    const path = join(cacheDir, name);
    if (!name.startsWith(`${runtime}-`) || path === keep) continue;
    await rm(path, { recursive: true, force: true });
    log(`removed ${name} from the CLI cache: the pin is now ${CLI_RUNTIMES[runtime].version}`);
  }
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

async function npmInstall(spec: string, dir: string): Promise<void> {
  // --ignore-scripts: nothing from the package runs here; its platform binary comes as an
  // optional dependency, which npm picks for this os and cpu without any script.
  const args = ["install", "--ignore-scripts", "--no-save", "--no-audit", "--no-fund", "--prefix", dir, spec];
  try {
    await promisify(execFile)("npm", args, { maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    const tail = stderr.trim().split("\n").slice(-10).join("\n");
    throw new DockerImageError("cli_fetch_failed", `npm install ${spec} failed:\n${tail}`);
  }
}

/** Runs the CLI's `--version` on this machine from where the image will have it; returns its first line. */
async function versionOnHost(
  runtime: CliRuntimeName,
  cli: CliRuntime,
  files: AgentCliFiles,
  dir: string,
): Promise<string> {
  const toHost = (imagePath: string) => {
    const entry = files.entries.find((e) => e.path === imagePath);
    return entry?.kind === "file" ? entry.hostPath : imagePath;
  };
  const [command, ...args] = cli.command.map(toHost);
  const home = join(dir, ".home");
  await mkdir(home, { recursive: true });
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(
      command === "node" ? process.execPath : (command ?? ""),
      [...args, "--version"],
      // Its own HOME: a CLI may write its settings on first start.
      { env: { ...process.env, HOME: home }, timeout: 60_000 },
    ));
  } catch (error) {
    throw new DockerImageError(
      "cli_fetch_failed",
      `${cliSpec(runtime)} does not run on this machine: ${error instanceof Error ? error.message : String(error)}`,
    );
  } finally {
    await rm(home, { recursive: true, force: true });
  }
  const line = stdout.trim().split("\n")[0] ?? "";
  if (!line.includes(cli.version)) {
    throw new DockerImageError(
      "cli_fetch_failed",
      `${cliSpec(runtime)} --version printed "${line}", not its version`,
    );
  }
  return line;
}
