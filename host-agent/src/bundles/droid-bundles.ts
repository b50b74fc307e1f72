/**
 * Where the container-side programs are on this machine. The built host-agent carries them
 * (embedded-bundles.ts) and writes them once under its data directory, in a directory named by
 * their content, so an upgrade never runs a mix of old and new; from source they are dist/'s.
 * The daemon has a child process of its own file write them (`unpack-bundles`): decoding and
 * decompressing ~8 MB left its own memory ~9 MiB higher for as long as it ran (V8's heap and
 * the allocator keep what they grew to), and raised its peak by ~14 MiB.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createBrotliDecompress } from "node:zlib";
import type { DroidBundles } from "../images/images.js";
import { PACKAGE_CACHE } from "../images/package-cache.js";
import { EMBEDDED_BUNDLES, type EmbeddedBundles } from "./embedded-bundles.js";

/** The two programs' file names (their maps are `<name>.map`). */
export const BUNDLE_FILES = {
  containerClient: "container-client.mjs",
  scriptedDroid: "scripted-droid.mjs",
} as const;

function inDir(dir: string): DroidBundles {
  return {
    containerClient: join(dir, BUNDLE_FILES.containerClient),
    scriptedDroid: join(dir, BUNDLE_FILES.scriptedDroid),
  };
}

/**
 * The host-agent file itself: this very file when built (a bundle's modules share its URL), or the
 * built dist/host-agent.mjs from a source checkout.
 */
export function hostAgentFile(): string {
  if (EMBEDDED_BUNDLES !== null) return fileURLToPath(import.meta.url);
  const built = fileURLToPath(new URL("../../../dist/host-agent.mjs", import.meta.url));
  if (!existsSync(built)) throw new Error(`${built} does not exist: run \`npm run build\` first`);
  return built;
}

/**
 * Where the agent CLIs are fetched to: under the data directory for the built host-agent, the
 * repository's package cache (the one its images are built from) from a source checkout.
 */
export function agentCliCache(dataDir: string): string {
  return EMBEDDED_BUNDLES !== null ? join(dataDir, "cache", "agent-cli") : PACKAGE_CACHE;
}

/** The command of the built host-agent that writes the bundles it carries under the directory it is given. */
export const UNPACK_COMMAND = "unpack-bundles";

/** How long a child gets to write the bundles. */
const UNPACK_TIMEOUT_MS = 120_000;

/**
 * The bundles' files: written under `dataDir` from the built host-agent (by a child process of
 * it, when they are not there yet), or dist/'s from source.
 */
export async function droidBundles(dataDir: string): Promise<DroidBundles> {
  if (EMBEDDED_BUNDLES !== null) {
    const root = join(dataDir, "bundles");
    if (!written(EMBEDDED_BUNDLES, root)) await unpackInChild(root);
    return writeBundles(EMBEDDED_BUNDLES, root);
  }
  const found = inDir(fileURLToPath(new URL("../../../dist/", import.meta.url)));
  for (const path of Object.values(found))
    if (!existsSync(path)) throw new Error(`${path} does not exist: run \`npm run build\` first`);
  return found;
}

/** The name of a set of embedded files: a hash of their names and (compressed) contents. */
export function bundlesId(files: Readonly<Record<string, string>>): string {
  const hash = createHash("sha256");
  for (const name of Object.keys(files).sort()) hash.update(`${name}\0${files[name]}\0`);
  return hash.digest("hex").slice(0, 16);
}

function written(embedded: EmbeddedBundles, root: string): boolean {
  const dir = join(root, embedded.id);
  return embedded.names.every((name) => existsSync(join(dir, name)));
}

/** Runs `host-agent unpack-bundles <root>` from this very file; fails with what the child said. */
async function unpackInChild(root: string): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, [hostAgentFile(), UNPACK_COMMAND, root], {
      timeout: UNPACK_TIMEOUT_MS,
      // It needs no setting, and gets none of this process's environment (the host token is in it).
      env: {},
    });
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string };
    throw new Error(`could not write the container-side bundles under ${root}: ${stderr?.trim() || message}`);
  }
}

/** Writes the embedded files into `<root>/<their id>/` unless there already; returns the programs' paths. */
export async function writeBundles(embedded: EmbeddedBundles, root: string): Promise<DroidBundles> {
  const dir = join(root, embedded.id);
  const paths = inDir(dir);
  for (const name of Object.values(BUNDLE_FILES))
    if (!embedded.names.includes(name)) throw new Error(`this host-agent was built without ${name}`);
  if (written(embedded, root)) return paths;
  const files = await embedded.files();
  // The process runtime's sessions run these as other users: readable by all, like /usr/bin.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (const name of embedded.names) {
    // Written aside and renamed, so a crash never leaves half a file under its name; streamed, so
    // the host-agent's peak memory does not grow by the programs' size.
    const partial = join(dir, `.${name}.${process.pid}.partial`);
    await pipeline(
      Readable.from([Buffer.from(files[name] ?? "", "base64")]),
      createBrotliDecompress(),
      createWriteStream(partial, { mode: 0o644 }),
    );
    await rename(partial, join(dir, name));
  }
  return paths;
}
