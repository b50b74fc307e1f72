/**
 * The node base image's root filesystem, made from this machine's own Node binary: no registry
 * is reachable here, so the image is `node` plus exactly the shared libraries `ldd` says it
 * loads, the npm, npx and corepack that go with it (node-toolchain.ts), a non-root user and the
 * directories a process expects.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import { promisify } from "node:util";
import type tar from "tar-stream";
import { EPOCH, hostFile, packStream, packTree, parentDirs, type TreeEntry } from "./build-context.js";
import { DockerImageError } from "./errors.js";
import { NODE_TOOLCHAIN, type NodeToolchain, toolchainKey } from "./node-toolchain.js";

/** Bump when the layout below changes, so existing base images are not reused. */
const LAYOUT_VERSION = 2;
export const DROID_UID = 1000;
export const DROID_HOME = "/home/droid";

const PASSWD = `root:x:0:0:root:/root:/sbin/nologin\ndroid:x:${DROID_UID}:${DROID_UID}:droid:${DROID_HOME}:/sbin/nologin\n`;
const GROUP = `root:x:0:\ndroid:x:${DROID_UID}:\n`;

export interface NodeRootfs {
  /** Host files and where they go in the image. */
  files: (TreeEntry & { kind: "file" })[];
  /** The npm and corepack pins: fetched only when the image is imported (fetchNodeToolchain). */
  toolchain: NodeToolchain;
  /** Deterministic id of this rootfs: Node version + hash of the file list, the pins and the layout. */
  tag: string;
}

/** The POSIX shell the image gets as /bin/sh (Debian's dash: small, libc only), when this machine has it. */
const SHELL = "/usr/bin/dash";

/**
 * The command-line tools an agent's shell expects (coreutils, findutils, grep, sed, awk, diff,
 * tar, gzip, git, make, curl...), copied from this machine under the same names in /usr/bin when it
 * has them (`env` also runs the npm and corepack scripts: `#!/usr/bin/env node`).
 * git's built-in commands work (status, diff, add, commit, log, init, branch...); its helpers in
 * git-core (remotes, `add -i`) are not there, and no network is either. bash and ps are what
 * Factory Droid's shell tool runs every command under (see CLI_RUNTIMES' `needs`); Claude Code,
 * Codex and Gemini reach for bash too.
 */
const TOOLS = [
  "basename cat chmod cmp cp cut date diff dirname du env expr find git grep gzip head id ln ls",
  "md5sum mkdir mktemp mv nproc readlink realpath rm rmdir sed seq sha256sum sleep sort stat tail",
  "tar tee touch tr uname uniq wc which xargs awk bash ps",
  // What an argv (a setup step, `container exec`) names without a shell to provide it.
  "echo printf true false test kill",
  // For builds an agent runs (a package's Makefile, a script's download through a proxy).
  "make curl",
  // `container exec` becomes its own user (and every workspace's group) through setpriv.
  "setpriv",
]
  .join(" ")
  .split(" ");
const TOOL_DIRS = ["/usr/bin", "/bin"];
/** Tools the product itself runs in the container (the others are for agents' shells). */
const REQUIRED_TOOLS = ["setpriv"];
/** Debian's bundle of the public certificate authorities, where curl and git look for it. */
const CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

/** The host binary behind tool `name` (symlinks and Debian's alternatives resolved), or null. */
function hostTool(name: string): string | null {
  for (const dir of TOOL_DIRS) {
    const path = `${dir}/${name}`;
    if (existsSync(path)) return realpathSync(path);
  }
  return null;
}

/**
 * Lists the host files of the base image: `process.execPath` as /usr/local/bin/node, a POSIX
 * shell as /bin/sh (so `container exec` of a command line, and agents' shell tools, have one), the
 * common command-line tools this machine has (TOOLS), and the libraries of all of them. The
 * toolchain's pins count in the tag; its files are fetched only for an import.
 */
export async function planNodeRootfs(toolchain: NodeToolchain = NODE_TOOLCHAIN): Promise<NodeRootfs> {
  const node = realpathSync(process.execPath);
  const binaries: [string, string][] = [["/usr/local/bin/node", node]];
  if (existsSync(SHELL)) binaries.push(["/bin/sh", realpathSync(SHELL)]);
  for (const name of TOOLS) {
    const host = hostTool(name);
    if (host === null && REQUIRED_TOOLS.includes(name)) {
      throw new DockerImageError(
        "base_image_failed",
        `${name} is missing on this machine and the image needs it (Debian: apt-get install util-linux)`,
      );
    }
    if (host !== null) binaries.push([`/usr/bin/${name}`, host]);
  }
  const files = binaries.map(([path, host]) => hostFile(path, host));
  // The public CAs, so curl, git and pip verify the hosts they reach through the egress gate
  // (Node and npm carry their own); copied when this machine has them.
  if (existsSync(CA_BUNDLE)) files.push(hostFile(CA_BUNDLE, CA_BUNDLE));
  const libraries = new Set<string>();
  for (const [, host] of binaries) {
    // A script (Debian's `which`) runs under /bin/sh and loads no libraries of its own.
    if (isScript(host)) continue;
    for (const lib of await sharedLibraries(host)) libraries.add(lib);
  }
  for (const lib of libraries) files.push(hostFile(lib, lib));

  const hash = createHash("sha256").update(
    `layout ${LAYOUT_VERSION}\n${PASSWD}${GROUP}${toolchainKey(toolchain)}\n`,
  );
  for (const file of files) {
    const { mtimeMs } = statSync(file.hostPath);
    hash.update(`${file.path}\0${file.hostPath}\0${file.size}\0${mtimeMs}\n`);
  }
  return { files, toolchain, tag: `${process.versions.node}-${hash.digest("hex").slice(0, 12)}` };
}

/**
 * Streams the rootfs as an uncompressed tar archive (what `docker import` takes), with the
 * toolchain's entries (fetchNodeToolchain), one file at a time.
 */
export function packNodeRootfs(rootfs: NodeRootfs, toolchain: readonly TreeEntry[]): tar.Pack {
  const entries = [...rootfs.files, ...toolchain];
  return packStream(async (pack) => {
    const fixed = ["/etc", "/home", "/root", "/tmp", "/usr/local/bin"];
    const dirs = [...new Set([...fixed, ...parentDirs(entries.map((entry) => entry.path))])].sort();
    for (const dir of dirs) {
      const mode = dir === "/tmp" ? 0o1777 : dir === "/root" ? 0o700 : 0o755;
      pack.entry({ name: dir.slice(1), type: "directory", mode, uid: 0, gid: 0, mtime: EPOCH });
    }
    pack.entry({
      name: DROID_HOME.slice(1),
      type: "directory",
      mode: 0o755,
      uid: DROID_UID,
      gid: DROID_UID,
      mtime: EPOCH,
    });
    pack.entry({ name: "etc/passwd", mode: 0o644, mtime: EPOCH }, PASSWD);
    pack.entry({ name: "etc/group", mode: 0o644, mtime: EPOCH }, GROUP);
    await packTree(pack, "", entries, new Set(dirs));
  });
}

/** Absolute paths `ldd` resolves for a binary, the dynamic loader included. */
export async function sharedLibraries(binary: string): Promise<string[]> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)("ldd", [binary]));
  } catch (error) {
    throw new DockerImageError("base_image_failed", `ldd ${binary} failed: ${toError(error).message}`);
  }
  const paths: string[] = [];
  for (const line of stdout.split("\n")) {
    if (line.includes("not found")) {
      throw new DockerImageError("base_image_failed", `ldd ${binary}: a library is missing: ${line.trim()}`);
    }
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or "/lib64/ld-linux-x86-64.so.2 (0x…)";
    // linux-vdso has no path (the kernel provides it).
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (match?.[1] !== undefined) paths.push(match[1]);
  }
  return [...new Set(paths)];
}

/** True for a file that starts with `#!` (a script: it loads no libraries of its own). */
export function isScript(path: string): boolean {
  const head = Buffer.alloc(2);
  const fd = openSync(path, "r");
  try {
    readSync(fd, head, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  return head.toString("latin1") === "#!";
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
