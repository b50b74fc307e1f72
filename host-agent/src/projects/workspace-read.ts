/**
 * `workspace_read`: a directory listing or a file's start, from inside one workspace on the host
 * filesystem. Agents write there and can plant symlinks, so the path is checked twice: as given
 * (relative, no `..`), and as opened — the host-agent opens it, then asks the kernel where the
 * open file really is (/proc/self/fd), and refuses anything outside the workspace. A symlink
 * swapped in between cannot win: what is read is what was checked.
 */
import { constants } from "node:fs";
import { type FileHandle, open, readdir, readlink, realpath } from "node:fs/promises";
import { isAbsolute, join, normalize, relative, sep } from "node:path";
import type { WorkspaceReadResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "./errors.js";

/** Most entries one listing returns (sorted by name; the rest are left out and said so). */
const MAX_ENTRIES = 5_000;

/** The normalised relative form of `path`; HostError("invalid") for absolute paths and `..`. */
export function checkRelative(path: string): string {
  if (path.includes("\0")) throw new HostError("invalid", "path contains a NUL byte");
  if (isAbsolute(path)) throw new HostError("invalid", "path must be relative to the workspace");
  if (path.split(/[\\/]/).includes("..")) throw new HostError("invalid", "path must not contain '..'");
  const normal = normalize(path === "" ? "." : path);
  if (normal.startsWith("..")) throw new HostError("invalid", "path leaves the workspace");
  return normal;
}

function inside(root: string, real: string): boolean {
  const rel = relative(root, real);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Reads `path` (relative) in the workspace directory `workspaceDir`. */
export async function readWorkspace(
  workspaceDir: string,
  path: string,
  kind: "dir" | "file",
  maxBytes: number,
): Promise<WorkspaceReadResult> {
  const rel = checkRelative(path);
  const root = await realpath(workspaceDir).catch(() => {
    throw new HostError("not_found", "the workspace does not exist on this host");
  });
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (kind === "dir" ? constants.O_DIRECTORY : 0);
  let handle: FileHandle;
  try {
    handle = await open(join(root, rel), flags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new HostError("not_found", `${rel} does not exist in the workspace`);
    if (code === "ENOTDIR") throw new HostError("invalid", `${rel} is not a directory`);
    if (code === "EISDIR") throw new HostError("invalid", `${rel} is a directory`);
    throw new HostError("invalid", `${rel} cannot be read: ${code ?? "error"}`);
  }
  try {
    const opened = `/proc/self/fd/${handle.fd}`;
    const real = await readlink(opened);
    if (!inside(root, real)) throw new HostError("invalid", `${rel} leads out of the workspace`);
    if (kind === "dir") return await listing(opened);
    const stat = await handle.stat();
    if (!stat.isFile()) throw new HostError("invalid", `${rel} is not a regular file`);
    const buffer = Buffer.alloc(Math.min(maxBytes, stat.size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { content: buffer.subarray(0, bytesRead).toString("utf8"), truncated: stat.size > bytesRead };
  } finally {
    await handle.close();
  }
}

async function listing(dir: string): Promise<WorkspaceReadResult> {
  const entries = (await readdir(dir, { withFileTypes: true }))
    .map((e) => ({ name: e.name, type: e.isDirectory() ? ("dir" as const) : ("file" as const) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return entries.length > MAX_ENTRIES
    ? { entries: entries.slice(0, MAX_ENTRIES), truncated: true }
    : { entries };
}
