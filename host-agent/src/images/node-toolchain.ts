/**
 * The npm, npx and corepack the node base image carries beside its Node, laid out as a Node
 * distribution lays them out: each package under /usr/local/lib/node_modules/, its commands as
 * symbolic links in /usr/local/bin. They are pinned here, fetched into the package cache like the
 * agent CLIs and checked with `--version` before they are kept. Both are plain JavaScript, so
 * the same files run under the Node 20 and the Node 22 an image may carry (see `engines`).
 */
import { join, posix } from "node:path";
import { hostTree, type TreeEntry } from "./build-context.js";
import { DockerImageError } from "./errors.js";
import { fetchPinned, PACKAGE_CACHE, packageSpec, versionOnHost } from "./package-cache.js";

/** A package of the toolchain: its exact version and its commands (name → script in the package). */
export interface ToolchainPin {
  package: string;
  version: string;
  bin: Readonly<Record<string, string>>;
}

export type NodeToolchain = Readonly<Record<string, ToolchainPin>>;

/**
 * The pins. npm 10.9 is the line Node 22 ships (engines: ^18.17.0 || >=20.5.0); corepack 0.34 is
 * the last line whose engines still take Node 20 (^20.10.0 || ^22.11.0 || >=24.0.0).
 */
export const NODE_TOOLCHAIN = {
  npm: { package: "npm", version: "10.9.9", bin: { npm: "bin/npm-cli.js", npx: "bin/npx-cli.js" } },
  // Its pnpm and yarn shims are not linked: they fetch those package managers on first use.
  corepack: { package: "corepack", version: "0.34.7", bin: { corepack: "dist/corepack.js" } },
} as const satisfies NodeToolchain;

const NODE_MODULES = "/usr/local/lib/node_modules";
const BIN_DIR = "/usr/local/bin";

/** A stable description of the toolchain and its layout, for the base image's content hash. */
export function toolchainKey(toolchain: NodeToolchain = NODE_TOOLCHAIN): string {
  return JSON.stringify({ NODE_MODULES, BIN_DIR, toolchain });
}

/** Fetches each package of the toolchain unless cached; returns what goes into the image. */
export async function fetchNodeToolchain(
  log: (line: string) => void,
  cacheDir: string = PACKAGE_CACHE,
  toolchain: NodeToolchain = NODE_TOOLCHAIN,
): Promise<TreeEntry[]> {
  const dirs: Record<string, string> = {};
  for (const [name, pin] of Object.entries(toolchain)) {
    const spec = packageSpec({ name, ...pin });
    dirs[name] = await fetchPinned({ name, ...pin }, cacheDir, log, {
      // Every command, run the way the image runs it (its script under node), names the pin.
      check: async (dir) => {
        const printed: string[] = [];
        for (const [command, script] of Object.entries(pin.bin)) {
          const path = join(dir, "node_modules", pin.package, script);
          printed.push(`${command} ${await versionOnHost(spec, ["node", path], pin.version, dir)}`);
        }
        return printed.join(", ");
      },
    });
  }
  return toolchainEntries(dirs, toolchain);
}

/**
 * The image's entries for the toolchain, each package taken from `node_modules/<package>` of its
 * npm prefix in `dirs` (by its name in `toolchain`). Files are made readable by everyone (and
 * the commands' scripts executable), whatever the cache's modes.
 */
export function toolchainEntries(
  dirs: Readonly<Record<string, string>>,
  toolchain: NodeToolchain = NODE_TOOLCHAIN,
): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const [name, pin] of Object.entries(toolchain)) {
    const dir = dirs[name];
    if (dir === undefined)
      throw new DockerImageError("cli_layout", `no directory for ${name} of the toolchain`);
    const packageDir = posix.join(NODE_MODULES, pin.package);
    const scripts = new Set(Object.values(pin.bin).map((script) => posix.join(packageDir, script)));
    const tree = hostTree(packageDir, join(dir, "node_modules", pin.package));
    for (const entry of tree) {
      if (entry.kind === "symlink") entries.push(entry);
      else entries.push({ ...entry, mode: scripts.has(entry.path) || entry.mode & 0o111 ? 0o755 : 0o644 });
    }
    for (const [command, script] of Object.entries(pin.bin)) {
      const target = posix.join(packageDir, script);
      if (!tree.some((entry) => entry.kind === "file" && entry.path === target)) {
        throw new DockerImageError(
          "cli_layout",
          `${packageSpec({ name, ...pin })} has no ${script}, the script of ${command}; the package layout changed`,
        );
      }
      entries.push({
        kind: "symlink",
        path: posix.join(BIN_DIR, command),
        target: posix.relative(BIN_DIR, target),
      });
    }
  }
  return entries;
}
