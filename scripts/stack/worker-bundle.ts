/**
 * The Worker as its local server runs it (scripts/stack/wrangler-dev-main.ts): the bundle
 * `wrangler deploy --dry-run` makes (the console's build included) and the Miniflare options
 * wrangler derives from wrangler.toml. Made once per content of their inputs and kept under the
 * cache directory as `<hash>/`: a server started again on the same sources (every test file
 * starts its own; `npm start` after a stop) skips wrangler altogether, which was more than half of
 * each start (loading wrangler ~1 s, bundling ~2.5 s, on a quiet machine).
 *
 * The inputs are every file under `WORKER_INPUTS` (the Worker's and the protocol's sources, the
 * console's sources, its build script, wrangler.toml, the lockfile that pins wrangler and every
 * bundled package); test/integration/worker-bundle.test.ts proves that a fresh bundle's source map
 * names no source outside them. Several servers may prepare at once: each builds into a directory
 * of its own and renames it into place; the first rename wins and the others use it.
 */
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { wranglerBin } from "./wrangler-bin.js";

/** What a bundle is made of, relative to the directory of wrangler.toml. */
export const WORKER_INPUTS = [
  "wrangler.toml",
  "package-lock.json",
  "tsconfig.json",
  "scripts/build-console.ts",
  "worker",
  "protocol",
] as const;

/** Directories under the inputs that are outputs or installs, never inputs. */
const SKIPPED_DIRS = new Set(["dist", "node_modules", ".wrangler"]);

/** Bundles kept in the cache (the newest; older ones are removed when a new one is made). */
const KEPT = 4;

/** A build directory left this long ago is a build whose process died. */
const ABANDONED_MS = 60 * 60 * 1000;

const OPTIONS_FILE = "worker-options.json";

export interface PreparedWorker {
  /** The bundle's directory (`index.js` is its entry). */
  dir: string;
  /** The Worker's name in wrangler.toml. */
  name: string;
  /** wrangler.toml's `[vars]`. */
  vars: Record<string, unknown>;
  /** Miniflare's options for the Worker as wrangler derives them (JSON: bindings, assets, ...). */
  workerOptions: Record<string, unknown>;
}

export class WorkerBundleError extends Error {
  readonly code = "worker_bundle_failed";
}

/** Every input file under `root`, as sorted paths relative to it (missing inputs are skipped). */
export async function workerInputFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  const walk = async (path: string): Promise<void> => {
    const info = await stat(path).catch(() => undefined);
    if (!info) return;
    if (info.isFile()) {
      files.push(relative(root, path).split(sep).join("/"));
      return;
    }
    if (!info.isDirectory()) return;
    for (const entry of await readdir(path, { withFileTypes: true })) {
      if (entry.isDirectory() && SKIPPED_DIRS.has(entry.name)) continue;
      await walk(join(path, entry.name));
    }
  };
  for (const input of WORKER_INPUTS) await walk(join(root, input));
  return files.sort();
}

/** A hash of every input's path and content (and of where the inputs are: the options name paths). */
export async function workerInputsHash(root: string): Promise<string> {
  const hash = createHash("sha256").update(`${root}\0`);
  for (const file of await workerInputFiles(root)) {
    hash
      .update(`${file}\0`)
      .update(await readFile(join(root, file)))
      .update("\0");
  }
  return hash.digest("hex").slice(0, 24);
}

/** The prepared Worker for wrangler.toml at `config`: from the cache, or made and cached. */
export async function prepareWorker(config: string, cacheDir: string): Promise<PreparedWorker> {
  const root = dirname(config);
  const dir = join(cacheDir, await workerInputsHash(root));
  const cached = await readPrepared(dir);
  if (cached && assetsPresent(cached)) {
    // Marks it recently used, so pruning keeps it.
    await utimes(dir, new Date(), new Date()).catch(() => undefined);
    return cached;
  }
  await mkdir(cacheDir, { recursive: true });
  const building = `${dir}.building-${process.pid}-${randomBytes(4).toString("hex")}`;
  await rm(building, { recursive: true, force: true });
  try {
    bundle(config, building);
    const options = await derivedOptions(config);
    await writeFile(join(building, OPTIONS_FILE), JSON.stringify(options));
    if (!(await renamed(building, dir)) && !(await readPrepared(dir))) {
      // What is there is not a bundle (a copy cut short): replaced.
      await rm(dir, { recursive: true, force: true });
      await renamed(building, dir);
    }
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  await prune(cacheDir);
  const made = await readPrepared(dir);
  if (!made) throw new WorkerBundleError(`the Worker's bundle in ${dir} could not be read back`);
  return made;
}

/** Moves a finished build into place; false when a directory is there already (another server's). */
async function renamed(from: string, to: string): Promise<boolean> {
  try {
    await rename(from, to);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST") return false;
    throw err;
  }
}

async function readPrepared(dir: string): Promise<PreparedWorker | undefined> {
  try {
    const options = JSON.parse(await readFile(join(dir, OPTIONS_FILE), "utf8")) as Omit<
      PreparedWorker,
      "dir"
    >;
    if (!existsSync(join(dir, "index.js"))) return undefined;
    return { ...options, dir };
  } catch {
    return undefined;
  }
}

/** The console's assets are built beside the bundle (wrangler's `[build]`); a clean removes them. */
function assetsPresent(prepared: PreparedWorker): boolean {
  const assets = prepared.workerOptions.assets as { directory?: unknown } | undefined;
  return typeof assets?.directory !== "string" || existsSync(join(assets.directory, "console"));
}

/** `wrangler deploy --dry-run`: the deploy bundle, written to `outDir` (its output shown only on failure). */
function bundle(config: string, outDir: string): void {
  const run = spawnSync(
    process.execPath,
    [wranglerBin(), "deploy", "--dry-run", "--config", config, "--outdir", outDir],
    { encoding: "utf8", env: { ...process.env, WRANGLER_HIDE_BANNER: "true" } },
  );
  if (run.status === 0) return;
  throw new WorkerBundleError(
    `wrangler could not bundle the Worker (exit ${run.status ?? run.signal}):\n${run.stdout}${run.stderr}`,
  );
}

/** What wrangler derives from wrangler.toml (loaded only here: wrangler takes a second to load). */
async function derivedOptions(config: string): Promise<Omit<PreparedWorker, "dir">> {
  const { unstable_getMiniflareWorkerOptions, unstable_readConfig } = await import("wrangler");
  const wrangler = unstable_readConfig({ config });
  const { workerOptions } = unstable_getMiniflareWorkerOptions(config);
  return {
    name: wrangler.name ?? "worker",
    vars: { ...wrangler.vars },
    workerOptions: JSON.parse(JSON.stringify(workerOptions)) as Record<string, unknown>,
  };
}

/** Keeps the `KEPT` most recently used bundles; removes the rest and builds abandoned an hour ago. */
async function prune(cacheDir: string): Promise<void> {
  const entries = await readdir(cacheDir, { withFileTypes: true }).catch(() => []);
  const dirs = await Promise.all(
    entries
      .filter((e) => e.isDirectory())
      .map(async (e) => ({
        path: join(cacheDir, e.name),
        building: e.name.includes(".building-"),
        mtime: await stat(join(cacheDir, e.name)).then(
          (s) => s.mtimeMs,
          () => 0,
        ),
      })),
  );
  const bundles = dirs.filter((d) => !d.building).sort((a, b) => b.mtime - a.mtime);
  const abandoned = dirs.filter((d) => d.building && d.mtime < Date.now() - ABANDONED_MS);
  await Promise.all(
    [...bundles.slice(KEPT), ...abandoned].map((d) => rm(d.path, { recursive: true, force: true })),
  );
}
