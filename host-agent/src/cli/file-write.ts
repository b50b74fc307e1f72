/**
 * Files and directories a command puts in place, with their modes from the start: a file is
 * written under a temporary name created with its mode (never readable by more than it should
 * be, not even for a moment) and then moved or linked to its name, so a reader sees the old file
 * or the whole new one, never a part.
 */
import { randomUUID } from "node:crypto";
import { chmod, link, mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Makes `path` with exactly `mode` when missing (its parents 0755); an existing one is left as it is. */
export async function makeDirectory(path: string, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  try {
    await mkdir(path, { mode });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
    throw error;
  }
  // mkdir's mode passes through the umask; the new, empty directory gets exactly its own.
  await chmod(path, mode);
}

export interface WriteOptions {
  mode: number;
  /** Replace an existing file; otherwise an existing one is an error (`onExists`), and stays as it was. */
  replace: boolean;
  /** The mode of the file's directory if it has to be made. */
  dirMode: number;
  /** The error for an existing file that may not be replaced. */
  onExists?: () => Error;
}

/** Writes `text` to `path` with `mode`, atomically; an existing symlink there is replaced, never followed. */
export async function writeFileAtomically(path: string, text: string, options: WriteOptions): Promise<void> {
  await makeDirectory(dirname(path), options.dirMode);
  const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  // Created by this call (O_EXCL) with at most `mode`: nobody else can have it open.
  const handle = await open(temp, "wx", options.mode);
  try {
    try {
      // open's mode passes through the umask, which only takes bits away; now exactly `mode`.
      await handle.chmod(options.mode);
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.replace) {
      await rename(temp, path);
      return;
    }
    // link() never replaces: whoever made the file first keeps it, with no window between check and write.
    await link(temp, path).catch((error: NodeJS.ErrnoException) => {
      throw error.code === "EEXIST" && options.onExists ? options.onExists() : error;
    });
  } finally {
    await rm(temp, { force: true });
  }
}
