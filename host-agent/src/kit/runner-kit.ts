/**
 * The runner kit: what a host mounts, read-only, at /.oubliette in a project container whose image
 * is not one of ours (any Linux image: glibc or musl, with or without Node or a shell), so the
 * runner, the droid's MCP server and the git remote helper run there as in our images:
 * - `ld.so`: this machine's glibc loader, changed to load the kit's libraries only (glibc-loader.ts);
 * - `lib…/`: the libraries of the kit's programs (and of the agent CLI it carries, when any);
 * - `bin/node`, `bin/setpriv`: this machine's, with the kit's loader as their interpreter (elf.ts);
 * - `bin/git-remote-oubliette`: git's helper for the project's remote, a script our Node runs;
 * - the container-client and scripted-droid bundles (with their source maps).
 * A kit is written once under the data directory, in a directory named by a hash of everything in
 * it (files by path, size and mtime), beside and renamed into place; its files are root's and
 * readable by all, so an agent's uid runs them and nobody in a container can change them.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, join, posix } from "node:path";
import { KitPaths } from "../../../protocol/container-layout.js";
import type { DroidBundles } from "../images/images.js";
import { sharedLibraries } from "../images/rootfs.js";
import { copyWithInterp, readElfFile } from "./elf.js";
import { KitError } from "./errors.js";
import { kitLoader } from "./glibc-loader.js";

/** Bump when the kit's layout changes in a way its file list does not show. */
const KIT_VERSION = 1;
/** Where setpriv is looked for on this machine (the kit carries a copy that names its own loader). */
const SETPRIV_DIRS = ["/usr/bin", "/bin"];

export interface RunnerKitInput {
  /** Where kits are kept (`<data dir>/kits`). */
  dir: string;
  bundles: DroidBundles;
  /** Host paths of other programs whose libraries the kit must hold too (an agent CLI's). */
  linked?: readonly string[];
  log?: (line: string) => void;
}

export interface RunnerKit {
  /** The kit's directory on this host: mount it read-only at KitPaths.root. */
  hostDir: string;
  /** Its id (the directory's name). */
  id: string;
}

const GIT_REMOTE_HELPER = "git-remote-oubliette";

/** The git remote helper: git runs it by name from PATH; it starts the container-client in its mode. */
function gitRemoteHelper(): string {
  return [
    `#!${KitPaths.node}`,
    "// git-remote-oubliette: the container-client serves the project's remote through the host.",
    'process.argv.splice(2, 0, "git-remote");',
    `await import(${JSON.stringify(KitPaths.containerClient)});`,
    "",
  ].join("\n");
}

/** The kit for these bundles (and programs), written unless a kit of the same content is there. */
export async function ensureRunnerKit(input: RunnerKitInput): Promise<RunnerKit> {
  const node = realpathSync(process.execPath);
  const setpriv = findSetpriv();
  const programs = [node, setpriv];
  const libraries = new Map<string, string>();
  let loader: string | null = null;
  for (const program of [...programs, ...(input.linked ?? [])]) {
    for (const lib of await sharedLibraries(program)) {
      const name = basename(lib);
      if (name.startsWith("ld-linux")) loader ??= realpathSync(lib);
      else libraries.set(name, realpathSync(lib));
    }
  }
  const interp = readElfFile(node).interp;
  if (interp === null)
    throw new KitError("not_elf", `${node} has no interpreter: the kit needs a dynamically linked Node`);
  loader ??= realpathSync(interp.path);

  const bundleFiles = bundleEntries(input.bundles);
  const hash = createHash("sha256").update(`kit ${KIT_VERSION}\n${gitRemoteHelper()}`);
  const inputs: [string, string][] = [
    ["bin/node", node],
    ["bin/setpriv", setpriv],
    ["ld.so", loader],
    ...[...libraries]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, path]): [string, string] => [`lib/${name}`, path]),
    ...bundleFiles,
  ];
  for (const [name, path] of inputs) {
    const stat = statSync(path);
    hash.update(`${name}\0${path}\0${stat.size}\0${stat.mtimeMs}\n`);
  }
  const id = hash.digest("hex").slice(0, 16);
  const hostDir = join(input.dir, id);
  if (existsSync(hostDir)) return { hostDir, id };

  input.log?.(`writing the runner kit ${id} (Node ${process.versions.node}, ${libraries.size} libraries)`);
  mkdirSync(input.dir, { recursive: true, mode: 0o755 });
  const partial = join(input.dir, `.${id}.${process.pid}.partial`);
  rmSync(partial, { recursive: true, force: true });
  try {
    mkdirSync(join(partial, "bin"), { recursive: true, mode: 0o755 });
    const patched = kitLoader(readFileSync(loader), KitPaths.root);
    const libDir = join(partial, posix.relative(KitPaths.root, patched.libDir));
    mkdirSync(libDir, { mode: 0o755 });
    writeFileSync(join(partial, "ld.so"), patched.bytes, { mode: 0o755 });
    for (const [name, path] of libraries) copyFileSync(path, join(libDir, name));
    copyWithInterp(node, join(partial, "bin", "node"), KitPaths.loader);
    copyWithInterp(setpriv, join(partial, "bin", "setpriv"), KitPaths.loader);
    writeFileSync(join(partial, "bin", GIT_REMOTE_HELPER), gitRemoteHelper());
    for (const [name, path] of bundleFiles) copyFileSync(path, join(partial, name));
    normaliseModes(partial, libDir);
    renameSync(partial, hostDir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another host-agent sharing the data directory wrote the same one first: that one serves.
    if (!existsSync(hostDir)) throw error;
  }
  return { hostDir, id };
}

/** Programs executable by all, everything else readable by all (whatever the sources' modes). */
function normaliseModes(root: string, libDir: string): void {
  chmodSync(root, 0o755);
  for (const name of ["node", "setpriv", GIT_REMOTE_HELPER]) chmodSync(join(root, "bin", name), 0o755);
  chmodSync(join(root, "ld.so"), 0o755);
  for (const name of Object.values(BUNDLE_NAMES)) {
    for (const file of [name, `${name}.map`])
      if (existsSync(join(root, file))) chmodSync(join(root, file), 0o644);
  }
  chmodSync(libDir, 0o755);
}

const BUNDLE_NAMES = {
  containerClient: basename(KitPaths.containerClient),
  scriptedDroid: basename(KitPaths.scriptedDroid),
} as const;

/** The bundles and their maps, as [name in the kit, host path]. */
function bundleEntries(bundles: DroidBundles): [string, string][] {
  const entries: [string, string][] = [];
  for (const [key, name] of Object.entries(BUNDLE_NAMES) as [keyof DroidBundles, string][]) {
    const path = bundles[key];
    if (!existsSync(path))
      throw new KitError("missing", `${path} does not exist; run \`npm run build\` first`);
    entries.push([name, path]);
    if (existsSync(`${path}.map`)) entries.push([`${name}.map`, `${path}.map`]);
  }
  return entries;
}

function findSetpriv(): string {
  for (const dir of SETPRIV_DIRS) {
    const path = join(dir, "setpriv");
    if (existsSync(path)) return realpathSync(path);
  }
  throw new KitError(
    "missing",
    "setpriv is missing on this machine and the runner kit needs it (Debian: apt-get install util-linux)",
  );
}
