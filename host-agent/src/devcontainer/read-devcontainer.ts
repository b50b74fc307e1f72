/**
 * Reads a workspace's devcontainer.json as data, the way a file the repository's authors (or an
 * agent) control must be read on the host: no symbolic link is followed (neither the file nor
 * `.devcontainer/`), only a regular file is read (a FIFO would block; opened non-blocking, it is
 * refused), and no more than the largest it may be. Nothing of it is executed here.
 */
import { constants } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  DEVCONTAINER_PATHS,
  type DevcontainerEnvironment,
  MAX_DEVCONTAINER_BYTES,
} from "../../../protocol/devcontainer.js";
import { DevcontainerError, parseDevcontainer } from "./parse-devcontainer.js";

/**
 * The environment the workspace at `workspaceDir` describes, or null when it has no
 * devcontainer.json; a DevcontainerError says why one cannot be used.
 */
export async function readDevcontainer(workspaceDir: string): Promise<DevcontainerEnvironment | null> {
  for (const path of DEVCONTAINER_PATHS) {
    const text = await readPlainFile(workspaceDir, path);
    if (text !== null) return parseDevcontainer(path, text);
  }
  return null;
}

/** The text of `relative` under `root`, null when absent; refused when it is anything but a plain file. */
async function readPlainFile(root: string, relative: string): Promise<string | null> {
  const parent = dirname(relative);
  if (parent !== ".") {
    const dir = await lstat(join(root, parent)).catch(() => null);
    if (dir === null) return null;
    if (!dir.isDirectory())
      throw new DevcontainerError(`${parent} is not a directory (a link is not followed)`);
  }
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const handle = await open(join(root, relative), flags).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    if (err.code === "ELOOP")
      throw new DevcontainerError(`${relative} is a symbolic link, which is not followed`);
    throw new DevcontainerError(`${relative} could not be read: ${err.code ?? err.message}`);
  });
  if (handle === null) return null;
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new DevcontainerError(`${relative} is not a plain file`);
    if (stat.size > MAX_DEVCONTAINER_BYTES)
      throw new DevcontainerError(`${relative} is ${stat.size} bytes, at most ${MAX_DEVCONTAINER_BYTES}`);
    const buffer = Buffer.alloc(MAX_DEVCONTAINER_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_DEVCONTAINER_BYTES)
      throw new DevcontainerError(`${relative} is more than ${MAX_DEVCONTAINER_BYTES} bytes`);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}
