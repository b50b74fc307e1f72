/**
 * The node base image's plan (host-agent/src/images/rootfs.ts, node-toolchain.ts), without an
 * engine or the registry: npm and corepack taken from the package cache and laid out as a Node
 * distribution lays them out, their commands linked in /usr/local/bin, the archive holding them,
 * and a base image tag that follows the pins.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import tar from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TreeEntry } from "../../host-agent/src/images/build-context.js";
import { DockerImageError } from "../../host-agent/src/images/errors.js";
import {
  fetchNodeToolchain,
  NODE_TOOLCHAIN,
  type NodeToolchain,
  toolchainEntries,
} from "../../host-agent/src/images/node-toolchain.js";
import { packNodeRootfs, planNodeRootfs } from "../../host-agent/src/images/rootfs.js";

let cache: string;
beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), "oub-toolchain-"));
});
afterEach(() => rmSync(cache, { recursive: true, force: true }));

/** A file in the cache, with `mode`. */
function put(path: string, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "#!/usr/bin/env node\n");
  chmodSync(path, mode);
}

/** A completed cache entry of each pin, as fetchPinned leaves one, with `files` (package-relative) in it. */
function cacheToolchain(toolchain: NodeToolchain, files: Record<string, string[]>): void {
  for (const [name, pin] of Object.entries(toolchain)) {
    const dir = join(cache, `${name}-${pin.version}`);
    for (const file of files[name] ?? []) put(join(dir, "node_modules", pin.package, file));
    writeFileSync(join(dir, ".oubliette-complete"), `${pin.package}@${pin.version}\n`);
  }
}

const PACKAGE_FILES = {
  npm: ["bin/npm-cli.js", "bin/npx-cli.js", "lib/cli.js", "node_modules/semver/bin/semver.js"],
  corepack: ["dist/corepack.js", "dist/lib/corepack.cjs"],
};

const byPath = (entries: TreeEntry[]) => new Map(entries.map((entry) => [entry.path, entry]));

describe("the toolchain's layout", () => {
  it("lays out the cached packages under /usr/local/lib/node_modules with their commands linked in /usr/local/bin", async () => {
    cacheToolchain(NODE_TOOLCHAIN, PACKAGE_FILES);
    const npmDir = join(cache, `npm-${NODE_TOOLCHAIN.npm.version}`, "node_modules", "npm");
    // What npm leaves in a bundled dependency's .bin, and a cache written with a tight umask.
    mkdirSync(join(npmDir, "node_modules", ".bin"));
    symlinkSync("../semver/bin/semver.js", join(npmDir, "node_modules", ".bin", "semver"));
    chmodSync(join(npmDir, "bin", "npm-cli.js"), 0o600);
    chmodSync(join(npmDir, "lib", "cli.js"), 0o600);

    const lines: string[] = [];
    const entries = byPath(await fetchNodeToolchain((line) => lines.push(line), cache));

    expect(lines.every((line) => line.includes("cached"))).toBe(true);
    expect(entries.get("/usr/local/bin/npm")).toEqual({
      kind: "symlink",
      path: "/usr/local/bin/npm",
      target: "../lib/node_modules/npm/bin/npm-cli.js",
    });
    expect(entries.get("/usr/local/bin/npx")).toMatchObject({
      target: "../lib/node_modules/npm/bin/npx-cli.js",
    });
    expect(entries.get("/usr/local/bin/corepack")).toMatchObject({
      target: "../lib/node_modules/corepack/dist/corepack.js",
    });
    // Readable by every uid, the commands' scripts executable.
    expect(entries.get("/usr/local/lib/node_modules/npm/bin/npm-cli.js")).toMatchObject({ mode: 0o755 });
    expect(entries.get("/usr/local/lib/node_modules/npm/lib/cli.js")).toMatchObject({ mode: 0o644 });
    expect(entries.get("/usr/local/lib/node_modules/corepack/dist/lib/corepack.cjs")).toMatchObject({
      kind: "file",
      mode: 0o644,
    });
    expect(entries.get("/usr/local/lib/node_modules/npm/node_modules/.bin/semver")).toEqual({
      kind: "symlink",
      path: "/usr/local/lib/node_modules/npm/node_modules/.bin/semver",
      target: "../semver/bin/semver.js",
    });
    // npm's own bin links of the prefix it was installed in stay out.
    expect(
      [...entries.keys()].some((path) => path.includes("/.oubliette") || path.startsWith("/node_modules")),
    ).toBe(false);
  });

  it("refuses a package whose command's script moved", () => {
    cacheToolchain(NODE_TOOLCHAIN, { ...PACKAGE_FILES, npm: ["bin/npm-cli.js", "lib/cli.js"] });
    const dirs = {
      npm: join(cache, `npm-${NODE_TOOLCHAIN.npm.version}`),
      corepack: join(cache, `corepack-${NODE_TOOLCHAIN.corepack.version}`),
    };
    expect(() => toolchainEntries(dirs)).toThrow(DockerImageError);
    expect(() => toolchainEntries(dirs)).toThrow(/bin\/npx-cli\.js/);
  });

  it("streams the toolchain into the base image's archive, its directories first", async () => {
    cacheToolchain(NODE_TOOLCHAIN, PACKAGE_FILES);
    const toolchain = await fetchNodeToolchain(() => {}, cache);
    const archive = packNodeRootfs({ files: [], toolchain: NODE_TOOLCHAIN, tag: "test" }, toolchain);
    const headers: tar.Header[] = [];
    const extract = tar.extract();
    extract.on("entry", (header, stream, next) => {
      headers.push(header);
      stream.on("end", next);
      stream.resume();
    });
    const done = new Promise<void>((resolve, reject) => {
      extract.on("finish", () => resolve());
      extract.on("error", reject);
    });
    archive.pipe(extract);
    await done;

    const names = headers.map((header) => header.name);
    const directory = (name: string) => headers.find((header) => header.name === name)?.type;
    expect(directory("usr/local/lib/node_modules/npm/bin")).toBe("directory");
    expect(directory("usr/local/lib/node_modules/corepack/dist")).toBe("directory");
    expect(names.indexOf("usr/local/lib/node_modules/npm/bin")).toBeLessThan(
      names.indexOf("usr/local/lib/node_modules/npm/bin/npm-cli.js"),
    );
    expect(headers.find((header) => header.name === "usr/local/bin/corepack")).toMatchObject({
      type: "symlink",
      linkname: "../lib/node_modules/corepack/dist/corepack.js",
    });
  });
});

describe("the base image's plan", () => {
  it("holds env for the scripts' #!, and curl and make where this machine has them", async () => {
    const paths = new Set((await planNodeRootfs()).files.map((file) => file.path));
    expect(paths.has("/usr/bin/env")).toBe(true);
    for (const tool of ["curl", "make"]) {
      expect(paths.has(`/usr/bin/${tool}`)).toBe(
        existsSync(`/usr/bin/${tool}`) || existsSync(`/bin/${tool}`),
      );
    }
  });

  it("gets a new tag when a pin changes, and keeps it otherwise", async () => {
    const bumped = { ...NODE_TOOLCHAIN, npm: { ...NODE_TOOLCHAIN.npm, version: "10.9.8" } };
    const [first, again, other] = await Promise.all([
      planNodeRootfs(),
      planNodeRootfs(NODE_TOOLCHAIN),
      planNodeRootfs(bumped),
    ]);
    expect(again.tag).toBe(first.tag);
    expect(other.tag).not.toBe(first.tag);
    expect(first.tag.startsWith(`${process.versions.node}-`)).toBe(true);
    // Three plans run ldd on every tool (~150 processes): over 5 s beside CI's image builds.
  }, 30_000);
});
