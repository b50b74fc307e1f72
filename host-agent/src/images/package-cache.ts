/**
 * Packages pinned exactly (the agent CLIs, the base image's npm and corepack), fetched from the
 * npm registry (the only one reachable) into `<cache>/<name>-<version>/` and kept only once a
 * check of what was installed passed on this machine. A pin's other versions are removed when it
 * changes, so the cache holds one version of each.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { hostTree, treeSize } from "./build-context.js";
import { DockerImageError } from "./errors.js";

/**
 * Where fetched packages are kept by default: in a source checkout, under its .oubliette/ (which
 * git ignores). The built host-agent passes its own (`images`, under its data directory).
 */
export const PACKAGE_CACHE = fileURLToPath(new URL("../../../.oubliette/cache/agent-cli", import.meta.url));
/** Written last into a fetched package's directory: without it the directory is fetched again. */
const COMPLETE_MARKER = ".oubliette-complete";

/** A package pinned exactly, and the name its cache entries go by (a runtime, or the package's own). */
export interface PinnedPackage {
  name: string;
  package: string;
  version: string;
}

export interface FetchOptions {
  /** Checks the installed package in its npm prefix; returns what it printed (for the log). */
  check: (dir: string) => Promise<string>;
  /** The package's platform binaries are picked for this machine: refuse anything but linux-x64. */
  linuxX64?: boolean;
}

/** `<package>@<version>` as npm takes it. */
export function packageSpec(pin: PinnedPackage): string {
  return `${pin.package}@${pin.version}`;
}

/** The npm prefix the pin is installed in, fetched and checked unless already cached. */
export async function fetchPinned(
  pin: PinnedPackage,
  cacheDir: string,
  log: (line: string) => void,
  options: FetchOptions,
): Promise<string> {
  const spec = packageSpec(pin);
  const dir = join(cacheDir, `${pin.name}-${pin.version}`);
  if (existsSync(join(dir, COMPLETE_MARKER))) {
    log(`${spec} is cached in ${dir}; not downloaded`);
    return dir;
  }
  if (options.linuxX64 === true && (process.platform !== "linux" || process.arch !== "x64")) {
    throw new DockerImageError(
      "cli_fetch_failed",
      `${spec} is fetched on linux-x64 only, not ${process.platform}-${process.arch}`,
    );
  }
  // A directory without the marker is an interrupted fetch: start over.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  log(`downloading ${spec} from the npm registry into ${dir}`);
  const startedAt = Date.now();
  await npmInstall(spec, dir);
  const printed = await options.check(dir);
  const megabytes = treeSize(hostTree("/", join(dir, "node_modules"))) / 1024 / 1024;
  await writeFile(join(dir, COMPLETE_MARKER), `${spec}\n`);
  await removeOtherVersions(pin, cacheDir, dir, log);
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  log(`downloaded ${spec}: ${megabytes.toFixed(0)} MB in ${seconds} s; on this machine it says "${printed}"`);
  return dir;
}

/**
 * Runs `argv` with `--version` on this machine (a leading "node" is this process's Node), in a
 * HOME of its own under `dir`; returns the first line, which must name `version`.
 */
export async function versionOnHost(
  spec: string,
  argv: readonly string[],
  version: string,
  dir: string,
): Promise<string> {
  const [command, ...args] = argv;
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
      `${spec} does not run on this machine: ${error instanceof Error ? error.message : String(error)}`,
    );
  } finally {
    await rm(home, { recursive: true, force: true });
  }
  const line = stdout.trim().split("\n")[0] ?? "";
  if (!line.includes(version)) {
    throw new DockerImageError("cli_fetch_failed", `${spec}: ${argv.join(" ")} --version printed "${line}"`);
  }
  return line;
}

async function npmInstall(spec: string, dir: string): Promise<void> {
  // --ignore-scripts: nothing from the package runs here; a CLI's platform binary comes as an
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

/** Deletes the pin's cached versions other than `keep` (earlier pins). */
async function removeOtherVersions(
  pin: PinnedPackage,
  cacheDir: string,
  keep: string,
  log: (line: string) => void,
): Promise<void> {
  const earlier = new RegExp(`^${pin.name.replace(/[^a-z0-9]/gi, "\\$&")}-\\d`);
  for (const name of await readdir(cacheDir)) {
    const path = join(cacheDir, name);
    if (!earlier.test(name) || path === keep) continue;
    await rm(path, { recursive: true, force: true });
    log(`removed ${name} from the package cache: the pin is now ${pin.version}`);
  }
}
