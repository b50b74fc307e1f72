/**
 * Where the container-side programs are on this machine. The built host-agent carries them
 * (embedded-bundles.ts) and writes them once under its data directory, in a directory named by
 * their content, so an upgrade never runs a mix of old and new; from source they are dist/'s.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync } from "node:zlib";
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

/** Writes the embedded files into `<root>/<content hash>/` unless there already; returns the programs' paths. */
export async function writeBundles(files: EmbeddedBundles, root: string): Promise<DroidBundles> {
  const names = Object.keys(files).sort();
  for (const name of Object.values(BUNDLE_FILES))
    if (!names.includes(name)) throw new Error(`this host-agent was built without ${name}`);
  const hash = createHash("sha256");
  for (const name of names) hash.update(`${name}\0${files[name]}\0`);
  const dir = join(root, hash.digest("hex").slice(0, 16));
  const paths = inDir(dir);
  if (names.every((name) => existsSync(join(dir, name)))) return paths;
  // The process runtime's sessions run these as other users: readable by all, like /usr/bin.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (const name of names) {
    // Written aside and renamed, so a crash never leaves half a file under its name.
    const partial = join(dir, `.${name}.${process.pid}.partial`);
    await writeFile(partial, brotliDecompressSync(Buffer.from(files[name] ?? "", "base64")), { mode: 0o644 });
    await rename(partial, join(dir, name));
  }
  return paths;
}
