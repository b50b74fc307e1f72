/**
 * Who owns a project's directories on the host, so that inside its container the kernel keeps
 * sessions apart (see `protocol/container-layout.ts` for the uids and gids):
 * - `root`: the host-agent is root and gives each directory to its user: a session's socket
 *   directory and home to that session's uid (mode 0700), a workspace to root and the
 *   workspace's group (setgid, 02770), the runner's sockets to root (0700);
 * - `open`: a non-root host-agent with Docker cannot give directories away: they are open to
 *   every uid (sessions still run as uids of their own, so `/proc` stays private, and each
 *   session creates its home itself);
 * - `own`: the process runtime: the agents are this user, nothing to change.
 */
import { chmod, chown, lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { Identities } from "../../../protocol/container-layout.js";

export type OwnershipMode = "root" | "open" | "own";

/** Most entries a recursive ownership change walks (a clone of a huge repository stops there). */
const MAX_WALK = 200_000;

export interface Owner {
  /** -1: leave the owner as it is (only the mode changes). */
  uid: number;
  gid: number;
  mode: number;
}

const ROOT = Identities.runnerUid;

/** The kinds of directory a project has, and who owns each. */
export type DirKind =
  | { kind: "socket-root" }
  | { kind: "sessions-root" }
  | { kind: "runner-sockets" }
  | { kind: "session-sockets"; uid: number; gid: number }
  | { kind: "homes" }
  | { kind: "home"; uid: number; gid: number }
  | { kind: "exec-home" }
  | { kind: "workspaces"; isolation: boolean }
  | { kind: "workspace"; gid: number };

/** The owner and mode a directory gets (null: leave it as it is). */
export function ownerOf(mode: OwnershipMode, dir: DirKind): Owner | null {
  if (mode === "own") return null;
  const root = mode === "root";
  const keep = (m: number): Owner => ({ uid: -1, gid: -1, mode: m });
  switch (dir.kind) {
    case "socket-root":
    case "sessions-root":
      return root ? { uid: ROOT, gid: ROOT, mode: 0o711 } : keep(0o711);
    case "runner-sockets":
      // In the container only the runner (uid 0) may enter; a non-root host cannot give it away.
      return root ? { uid: ROOT, gid: ROOT, mode: 0o700 } : keep(0o711);
    case "session-sockets":
      return root ? { uid: dir.uid, gid: dir.gid, mode: 0o700 } : keep(0o711);
    case "homes":
      // Open: each session makes its own home here (sticky, not listable).
      return root ? { uid: ROOT, gid: ROOT, mode: 0o711 } : keep(0o1733);
    case "home":
      return root ? { uid: dir.uid, gid: dir.gid, mode: 0o700 } : null;
    case "exec-home":
      // The home of `container exec` and of the setup (npm's cache): the exec user's alone.
      return root ? { uid: Identities.execUid, gid: Identities.projectGid, mode: 0o700 } : keep(0o777);
    case "workspaces":
      if (!root) return keep(0o777);
      return dir.isolation
        ? { uid: ROOT, gid: ROOT, mode: 0o711 }
        : { uid: ROOT, gid: Identities.projectGid, mode: 0o750 };
    case "workspace":
      return root ? { uid: ROOT, gid: dir.gid, mode: 0o2770 } : keep(0o777);
  }
}

/** Gives one directory its owner and mode (nothing to do for a null owner). */
export async function claim(path: string, owner: Owner | null): Promise<void> {
  if (!owner) return;
  if (owner.uid >= 0) await chown(path, owner.uid, owner.gid);
  await chmod(path, owner.mode);
}

/**
 * Gives everything below a workspace directory (what git made as the host-agent) to the
 * workspace: as root, to `container exec`'s user and the workspace's group, group-writable, the
 * directories setgid; otherwise writable for all. Symlinks are never followed. Bounded.
 */
export async function claimTree(dir: string, mode: OwnershipMode, gid: number): Promise<void> {
  if (mode === "own") return;
  const queue = [dir];
  let seen = 0;
  while (queue.length > 0 && seen < MAX_WALK) {
    const current = queue.pop() as string;
    for (const entry of await readdir(current, { withFileTypes: true })) {
      seen += 1;
      const path = join(current, entry.name);
      if (entry.isSymbolicLink()) {
        if (mode === "root") await lchown(path, Identities.execUid, gid);
        continue;
      }
      const stat = await lstat(path);
      if (mode === "root") await chown(path, Identities.execUid, gid);
      await chmod(path, widened(stat.mode, entry.isDirectory(), mode));
      if (entry.isDirectory()) queue.push(path);
    }
  }
}

/** The mode a file or directory of a workspace gets: the group (open: everyone) may do what the owner may. */
export function widened(current: number, isDirectory: boolean, mode: OwnershipMode): number {
  const perms = current & 0o777;
  const ownerBits = (perms >> 6) & 0o7;
  if (mode === "open") return perms | (isDirectory ? 0o777 : ownerBits * 0o111);
  const withGroup = perms | (ownerBits << 3);
  return isDirectory ? withGroup | 0o2000 : withGroup;
}
