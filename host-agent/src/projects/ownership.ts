/**
 * Who owns a project's directories on the host, so the container's users can work in them:
 * - `root`: the host-agent is root and gives each directory to its user (uid 1000 without
 *   isolation; with it, the workspace's own uid, group root, mode 0770 — the container's root
 *   has no DAC_OVERRIDE, so the runner reaches a workspace (to start its agent there) and
 *   `container exec` sees into it only through that group; other workspaces' uids cannot);
 * - `open`: a non-root host-agent with Docker: directories are world-writable for uid 1000;
 * - `own`: the process runtime: the agents are this user, nothing to change.
 */
import { chmod, chown, lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

export type OwnershipMode = "root" | "open" | "own";

/** uid and gid of the container's user without isolation (the image's `droid`). */
export const SHARED_UID = 1000;
/** Most entries a recursive ownership change walks (a clone of a huge repository stops there). */
const MAX_WALK = 200_000;

export interface Owner {
  uid: number;
  gid: number;
  mode: number;
}

/** The owner the workspaces root (`/workspace`) gets. */
export function rootOwner(mode: OwnershipMode, isolation: boolean): Owner | null {
  if (mode === "root")
    return isolation ? { uid: 0, gid: 0, mode: 0o711 } : { uid: SHARED_UID, gid: SHARED_UID, mode: 0o755 };
  if (mode === "open") return { uid: -1, gid: -1, mode: 0o777 };
  return null;
}

/** The owner a workspace directory gets; `uid` is the workspace's own under isolation. */
export function workspaceOwner(mode: OwnershipMode, uid: number | null): Owner | null {
  if (mode === "root")
    return uid === null ? { uid: SHARED_UID, gid: SHARED_UID, mode: 0o755 } : { uid, gid: 0, mode: 0o770 };
  if (mode === "open") return { uid: -1, gid: -1, mode: 0o777 };
  return null;
}

/** Gives one directory its owner and mode (nothing to do for `own`). */
export async function claim(path: string, owner: Owner | null): Promise<void> {
  if (!owner) return;
  if (owner.uid >= 0) await chown(path, owner.uid, owner.gid);
  await chmod(path, owner.mode);
}

/**
 * Gives everything below `dir` (what git made as the host-agent) to the workspace's user: owner
 * changed without following symlinks; under `open`, made writable for all. Bounded.
 */
export async function claimTree(dir: string, owner: Owner | null): Promise<void> {
  if (!owner) return;
  const queue = [dir];
  let seen = 0;
  while (queue.length > 0 && seen < MAX_WALK) {
    const current = queue.pop() as string;
    for (const entry of await readdir(current, { withFileTypes: true })) {
      seen += 1;
      const path = join(current, entry.name);
      if (owner.uid >= 0) {
        // The agent's group is its uid (the directory alone is group root, for the runner).
        await lchown(path, owner.uid, owner.uid);
      } else if (!entry.isSymbolicLink()) {
        const stat = await lstat(path);
        await chmod(path, stat.mode | (entry.isDirectory() ? 0o777 : 0o666));
      }
      if (entry.isDirectory()) queue.push(path);
    }
  }
}
