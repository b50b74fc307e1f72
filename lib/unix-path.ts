/**
 * Unix socket paths longer than the kernel's `sun_path` (108 bytes with its NUL) cannot be bound
 * or connected to. A project's session sockets sit a few directories deep under the host's socket
 * root, so on a host with a long root they pass that limit. Through a directory's file
 * descriptor the same socket has a short name — `/proc/self/fd/<fd>/<name>` — that the kernel
 * resolves at bind and connect time. Linux only, which is what hosts run.
 */
import { closeSync, constants, openSync } from "node:fs";
import { basename, dirname } from "node:path";

/** Longest path `sun_path` holds (it needs a terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Runs `use` with a name for the socket at `path` that the kernel accepts: `path` itself when it
 * is short enough, else one through a descriptor of its directory, closed once `use` settles.
 */
export async function withSocketPath<T>(path: string, use: (usable: string) => Promise<T>): Promise<T> {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return use(path);
  const fd = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    return await use(`/proc/self/fd/${fd}/${basename(path)}`);
  } finally {
    closeSync(fd);
  }
}
