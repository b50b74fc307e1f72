/**
 * Where the container-side programs are on this machine. The built host-agent carries them
 * (embedded-bundles.ts) and writes them once under its data directory, in a directory named by
 * their content, so an upgrade never runs a mix of old and new; from source they are dist/'s.
 */
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createBrotliDecompress } from "node:zlib";
import type { DroidBundles } from "../images/images.js";
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

/** The bundles' files: written under `dataDir` from the built host-agent, or dist/'s from source. */
export async function droidBundles(dataDir: string): Promise<DroidBundles> {
  if (EMBEDDED_BUNDLES !== null) return writeBundles(EMBEDDED_BUNDLES, join(dataDir, "bundles"));
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

/** Writes the embedded files into `<root>/<their id>/` unless there already; returns the programs' paths. */
export async function writeBundles(embedded: EmbeddedBundles, root: string): Promise<DroidBundles> {
  const dir = join(root, embedded.id);
  const paths = inDir(dir);
  for (const name of Object.values(BUNDLE_FILES))
    if (!embedded.names.includes(name)) throw new Error(`this host-agent was built without ${name}`);
  if (embedded.names.every((name) => existsSync(join(dir, name)))) return paths;
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
