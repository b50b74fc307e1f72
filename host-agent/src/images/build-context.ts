/**
 * Tar archives for the engine (an import's root filesystem, a build's context), made of host
 * files streamed one at a time: agent CLIs are hundreds of MB, so nothing is read into memory.
 */
import { createReadStream, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { posix } from "node:path";
import { Readable } from "node:stream";
import tar from "tar-stream";

/** Every entry gets the same mtime, so equal inputs make equal archives. */
export const EPOCH = new Date(0);

/** A host file or symbolic link that goes into an archive at `path` (absolute, as in the image). */
export type TreeEntry =
  | { kind: "file"; path: string; hostPath: string; size: number; mode: number }
  | { kind: "symlink"; path: string; target: string };

/** The host file `hostPath` (links followed) as `path` in the archive. */
export function hostFile(path: string, hostPath: string): TreeEntry & { kind: "file" } {
  const real = realpathSync(hostPath);
  const stat = statSync(real);
  return { kind: "file", path, hostPath: real, size: stat.size, mode: stat.mode & 0o777 };
}

/** Regular files and symbolic links under `hostDir`, as entries under `path`; `skip` names relative paths left out. */
export function hostTree(path: string, hostDir: string, skip: readonly string[] = []): TreeEntry[] {
  const entries: TreeEntry[] = [];
  const walk = (relative: string) => {
    const hostPath = posix.join(hostDir, relative);
    const stat = lstatSync(hostPath);
    const imagePath = posix.join(path, relative);
    if (stat.isSymbolicLink()) {
      entries.push({ kind: "symlink", path: imagePath, target: readlinkSync(hostPath) });
    } else if (stat.isDirectory()) {
      for (const name of readdirSync(hostPath).sort()) {
        const child = relative === "" ? name : `${relative}/${name}`;
        if (!skip.includes(child)) walk(child);
      }
    } else if (stat.isFile()) {
      entries.push({ kind: "file", path: imagePath, hostPath, size: stat.size, mode: stat.mode & 0o777 });
    }
  };
  walk("");
  return entries;
}

/** Total bytes of the files among `entries`. */
export function treeSize(entries: readonly TreeEntry[]): number {
  return entries.reduce((sum, entry) => sum + (entry.kind === "file" ? entry.size : 0), 0);
}

/** Directories that hold `paths`, parents first, "/" excluded. */
export function parentDirs(paths: Iterable<string>): string[] {
  const dirs = new Set<string>();
  for (const path of paths) {
    for (let dir = posix.dirname(path); dir !== "/" && dir !== "."; dir = posix.dirname(dir)) dirs.add(dir);
  }
  return [...dirs].sort();
}

/**
 * Appends `entries` under `prefix` (e.g. "rootfs" in a build context, "" for an import), with a
 * root-owned 0755 directory entry for each parent not in `skipDirs`.
 */
export async function packTree(
  pack: tar.Pack,
  prefix: string,
  entries: readonly TreeEntry[],
  skipDirs: ReadonlySet<string> = new Set(),
): Promise<void> {
  const name = (path: string) => posix.join(prefix, path.slice(1));
  for (const dir of parentDirs(entries.map((entry) => entry.path))) {
    if (skipDirs.has(dir)) continue;
    pack.entry({ name: name(dir), type: "directory", mode: 0o755, uid: 0, gid: 0, mtime: EPOCH });
  }
  for (const entry of entries) {
    if (entry.kind === "symlink") {
      pack.entry({ name: name(entry.path), type: "symlink", linkname: entry.target, mtime: EPOCH });
      continue;
    }
    // One entry at a time: a tar stream is sequential.
    await new Promise<void>((resolve, reject) => {
      const header = { name: name(entry.path), size: entry.size, mode: entry.mode, mtime: EPOCH };
      const sink = pack.entry(header, (error) => (error ? reject(error) : resolve()));
      const source = createReadStream(entry.hostPath);
      source.once("error", reject);
      source.pipe(sink);
    });
  }
}

/** Runs `fill` on a new pack and finalizes it; a failure destroys the stream with that error. */
export function packStream(fill: (pack: tar.Pack) => Promise<void>): tar.Pack {
  const pack = tar.pack();
  void fill(pack)
    .then(() => pack.finalize())
    .catch((error: unknown) => pack.destroy(error instanceof Error ? error : new Error(String(error))));
  return pack;
}

/** tar-stream packs are streamx streams; dockerode wants a Node stream of bytes. */
export function asNodeStream(pack: tar.Pack): Readable {
  return Readable.from(pack, { objectMode: false });
}
