/**
 * Images that are not ours, for the tests of the runner kit: these machines reach no registry, so
 * each is a root filesystem of this machine's own files, imported (as the node base image is),
 * with no Node and nothing of ours in it:
 * - `python`: python3 with its standard library, /bin/sh, bash and the common tools an agent's
 *   shell reaches for, and a program of the image's own in /usr/local/bin;
 * - `python-bare`: python3 and nothing else (no shell at all).
 * Each is imported once per content (the tag names a hash of its files); its PATH is set, and it
 * carries no `oubliette.image` label.
 */
import { createHash } from "node:crypto";
import { existsSync, realpathSync, statSync } from "node:fs";
import { Readable } from "node:stream";
import type Dockerode from "dockerode";
import tar from "tar-stream";
import {
  asNodeStream,
  EPOCH,
  hostFile,
  hostTree,
  packStream,
  packTree,
  parentDirs,
  type TreeEntry,
} from "../../host-agent/src/images/build-context.js";
import { imageExists } from "../../host-agent/src/images/images.js";
import { readProgress } from "../../host-agent/src/images/progress.js";
import { isScript, sharedLibraries } from "../../host-agent/src/images/rootfs.js";

export type TestImageKind = "python" | "python-bare";

/** What the image's own /usr/local/bin program prints. */
export const IMAGE_PROGRAM = { name: "hello-image", output: "hello from the image's own /usr/local/bin" };
const IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin";
/** The standard library's parts no test needs (half its size). */
const STDLIB_SKIP = ["test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data"];
/** What an agent's shell reaches for, beside the shell (claude's Bash tool, codex's exec). */
const SHELL_TOOLS = [
  "bash cat ls env printf mkdir rm cp mv touch grep sed head tail wc sort tr uname id ps sleep",
  "dirname basename realpath readlink find xargs which",
]
  .join(" ")
  .split(" ");

function hostProgram(name: string): string | null {
  for (const dir of ["/usr/bin", "/bin"])
    if (existsSync(`${dir}/${name}`)) return realpathSync(`${dir}/${name}`);
  return null;
}

async function plan(kind: TestImageKind): Promise<TreeEntry[]> {
  const python = hostProgram("python3");
  if (python === null) throw new Error("this machine has no python3 to build the test image from");
  const version = /python(\d+\.\d+)$/.exec(python)?.[1];
  if (version === undefined) throw new Error(`python3 is ${python}: no version in its name`);
  const binaries: [string, string][] = [
    ["/usr/bin/python3", python],
    [`/usr/bin/python${version}`, python],
  ];
  if (kind === "python") {
    binaries.push(["/bin/sh", realpathSync("/usr/bin/dash")]);
    for (const name of SHELL_TOOLS) {
      const host = hostProgram(name);
      if (host !== null) binaries.push([`/usr/bin/${name}`, host]);
    }
  }
  const entries: TreeEntry[] = binaries.map(([path, host]) => hostFile(path, host));
  entries.push(...hostTree(`/usr/lib/python${version}`, `/usr/lib/python${version}`, STDLIB_SKIP));
  const libraries = new Set<string>();
  for (const [, host] of binaries) {
    if (isScript(host)) continue;
    for (const lib of await sharedLibraries(host)) libraries.add(lib);
  }
  for (const lib of libraries) entries.push(hostFile(lib, lib));
  return entries;
}

/** Imports the test image of `kind` unless it exists; returns its tag. */
export async function ensureTestImage(docker: Dockerode, kind: TestImageKind): Promise<string> {
  const entries = await plan(kind);
  const program = `#!/bin/sh\necho "${IMAGE_PROGRAM.output}"\n`;
  const hash = createHash("sha256").update(`${kind}\n${program}\n`);
  for (const entry of entries) {
    if (entry.kind === "symlink") hash.update(`${entry.path}->${entry.target}\n`);
    else
      hash.update(`${entry.path}\0${entry.hostPath}\0${entry.size}\0${statSync(entry.hostPath).mtimeMs}\n`);
  }
  const tag = hash.digest("hex").slice(0, 12);
  const ref = `oubliette-test/${kind}:${tag}`;
  if (await imageExists(docker, ref)) return ref;
  const rootfs = packStream(async (pack) => {
    const fixed = ["/etc", "/home", "/root", "/tmp", "/usr/local/bin"];
    const dirs = [...new Set([...fixed, ...parentDirs(entries.map((entry) => entry.path))])].sort();
    for (const dir of dirs) {
      const mode = dir === "/tmp" ? 0o1777 : dir === "/root" ? 0o700 : 0o755;
      pack.entry({ name: dir.slice(1), type: "directory", mode, uid: 0, gid: 0, mtime: EPOCH });
    }
    pack.entry({ name: "etc/passwd", mode: 0o644, mtime: EPOCH }, "root:x:0:0:root:/root:/bin/sh\n");
    pack.entry({ name: "etc/group", mode: 0o644, mtime: EPOCH }, "root:x:0:\n");
    if (kind === "python")
      pack.entry({ name: `usr/local/bin/${IMAGE_PROGRAM.name}`, mode: 0o755, mtime: EPOCH }, program);
    await packTree(pack, "", entries, new Set(dirs));
  });
  const stream = await docker.importImage(asNodeStream(rootfs), {
    repo: `oubliette-test/${kind}`,
    tag,
    changes: [`ENV PATH=${IMAGE_PATH}`, 'CMD ["python3"]'],
  });
  const result = await readProgress(stream, () => {});
  if (result.error !== null) throw new Error(`importing ${ref} failed: ${result.error}`);
  return ref;
}

/** The tag of the image ensureOtherArchitectureImage loads. */
const OTHER_ARCHITECTURE_IMAGE = "oubliette-test/arm64:1";

/**
 * An image built for linux/arm64 (one small file in it), loaded as `docker load` takes an image
 * archive: `docker import` and the classic builder record this machine's architecture whatever
 * they are asked, and these machines reach no registry to pull one. Returns its tag.
 */
export async function ensureOtherArchitectureImage(docker: Dockerode): Promise<string> {
  if (await imageExists(docker, OTHER_ARCHITECTURE_IMAGE)) return OTHER_ARCHITECTURE_IMAGE;
  const layer = await tarBytes((pack) => {
    pack.entry({ name: "hello.txt", mode: 0o644, mtime: EPOCH }, "built for arm64\n");
  });
  const diffId = `sha256:${createHash("sha256").update(layer).digest("hex")}`;
  const config = JSON.stringify({
    architecture: "arm64",
    os: "linux",
    config: { Env: [`PATH=${IMAGE_PATH}`], Cmd: ["/hello"] },
    rootfs: { type: "layers", diff_ids: [diffId] },
  });
  const configName = `${createHash("sha256").update(config).digest("hex")}.json`;
  const manifest = JSON.stringify([
    { Config: configName, RepoTags: [OTHER_ARCHITECTURE_IMAGE], Layers: ["layer/layer.tar"] },
  ]);
  const archive = await tarBytes((pack) => {
    pack.entry({ name: configName, mtime: EPOCH }, config);
    pack.entry({ name: "layer", type: "directory", mode: 0o755, mtime: EPOCH });
    pack.entry({ name: "layer/layer.tar", mtime: EPOCH }, layer);
    pack.entry({ name: "manifest.json", mtime: EPOCH }, manifest);
  });
  const stream = await docker.loadImage(Readable.from([archive]));
  const result = await readProgress(stream, () => {});
  if (result.error !== null) throw new Error(`loading ${OTHER_ARCHITECTURE_IMAGE} failed: ${result.error}`);
  return OTHER_ARCHITECTURE_IMAGE;
}

/** A tar archive's bytes, its entries written by `fill`. */
async function tarBytes(fill: (pack: tar.Pack) => void): Promise<Buffer> {
  const pack = tar.pack();
  fill(pack);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
