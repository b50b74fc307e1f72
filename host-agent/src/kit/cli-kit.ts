/**
 * An agent CLI for an image that is not ours: the files our agent images hold under
 * /opt/agents/<runtime>/ (agent-cli.ts), written once under the data directory for a bind mount
 * (read-only) at that very path, so the runtime's command is the same everywhere. Its dynamically
 * linked programs get the kit's loader as their interpreter (they run on the kit's glibc, whatever
 * the image has); every other file is a hard link to the package cache's (a copy across file
 * systems). The directory is named by a hash of the files it holds.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { dirname, join, posix } from "node:path";
import { AGENTS_DIR } from "../../../protocol/agent-runtimes.js";
import { KitPaths } from "../../../protocol/container-layout.js";
import type { AgentCliFiles } from "../images/agent-cli.js";
import { hostPlatform } from "../runtime/foreign-image.js";
import { copyWithInterp, ELF_MACHINES, isElf, readElfFile } from "./elf.js";

/** Bump when how a CLI is laid out here changes in a way its file list does not show. */
const CLI_KIT_VERSION = 1;

export interface CliKit {
  /** The CLI's directory on this host: mount it read-only at `containerDir`. */
  hostDir: string;
  containerDir: string;
}

/** The CLI's files laid out for a mount at /opt/agents/<runtime>, unless already there. */
export function ensureCliKit(dir: string, cli: AgentCliFiles, log?: (line: string) => void): CliKit {
  const containerDir = posix.join(AGENTS_DIR, cli.runtime);
  const hash = createHash("sha256").update(`cli-kit ${CLI_KIT_VERSION}\0${KitPaths.loader}\n`);
  for (const entry of cli.entries) {
    if (entry.kind === "symlink") hash.update(`${entry.path}\0->${entry.target}\n`);
    else
      hash.update(`${entry.path}\0${entry.hostPath}\0${entry.size}\0${statSync(entry.hostPath).mtimeMs}\n`);
  }
  const hostDir = join(dir, `${cli.runtime}-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(hostDir)) return { hostDir, containerDir };

  log?.(`laying out the ${cli.runtime} CLI for images that are not ours (${cli.entries.length} files)`);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const partial = `${hostDir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  try {
    mkdirSync(partial, { mode: 0o755 });
    for (const entry of cli.entries) {
      const target = join(partial, posix.relative(containerDir, entry.path));
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      if (entry.kind === "symlink") {
        symlinkSync(entry.target, target);
        continue;
      }
      if (linkedProgram(entry.hostPath)) copyWithInterp(entry.hostPath, target, KitPaths.loader);
      else place(entry.hostPath, target);
      chmodSync(target, entry.mode & 0o111 ? 0o755 : 0o644);
    }
    renameSync(partial, hostDir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another host-agent sharing the data directory wrote the same one first: that one serves.
    if (!existsSync(hostDir)) throw error;
  }
  return { hostDir, containerDir };
}

/**
 * True for a program of this machine's kind (64-bit, little-endian, its architecture) that names
 * a loader. A static program or a library runs as it is; a package's prebuilt files for other
 * platforms (32-bit ARM, say) are carried untouched, as the agent image carries them.
 */
function linkedProgram(path: string): boolean {
  const head = Buffer.alloc(6);
  const fd = openSync(path, "r");
  try {
    if (readSync(fd, head, 0, 6, 0) < 6 || !isElf(head) || head[4] !== 2 || head[5] !== 1) return false;
  } finally {
    closeSync(fd);
  }
  const info = readElfFile(path);
  return info.interp !== null && ELF_MACHINES[info.machine] === hostPlatform().architecture;
}

/** A hard link to `from` (no bytes copied), or a copy where the two are on different file systems. */
function place(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}
