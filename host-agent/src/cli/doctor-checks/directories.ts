/**
 * Check 5: the host-agent's own directories, as it makes them at start (cli/start.ts): the socket
 * directory (0711) and the data directory (0700). Each exists or can be made; it is a directory
 * of the user doctor runs as (the host-agent's, when run the same way), which no other user may
 * write to (they could swap a project's socket directory or workspace for their own). The
 * containers need no access to the socket directory itself: each gets its project's directory
 * below it as a bind mount. The data directory holds the projects' workspaces, so other users
 * may not look in either, and it must last: README's `--data-dir`.
 */
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname } from "node:path";
import type { DoctorFinding } from "./finding.js";

const mode = (bits: number) => `0${(bits & 0o7777).toString(8)}`;

interface DirRule {
  check: "socket-dir" | "data-dir";
  /** The mode the host-agent makes it with. */
  madeWith: number;
  /** Bits no one but its owner may have. */
  forbidden: number;
  why: string;
}

const RULES = {
  socket: {
    check: "socket-dir",
    madeWith: 0o711,
    forbidden: 0o022,
    why: "other users could replace the projects' socket directories",
  },
  data: {
    check: "data-dir",
    madeWith: 0o700,
    forbidden: 0o077,
    why: "other users could read or change the projects' workspaces",
  },
} as const satisfies Record<string, DirRule>;

/** The nearest ancestor of `path` that exists (to say whether `path` could be made). */
async function nearestExisting(path: string): Promise<string> {
  let current = dirname(path);
  while (current !== dirname(current)) {
    if (
      await stat(current).then(
        () => true,
        () => false,
      )
    )
      return current;
    current = dirname(current);
  }
  return current;
}

async function checkDir(path: string, rule: DirRule): Promise<DoctorFinding> {
  const { check } = rule;
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (info === null) {
    const parent = await nearestExisting(path);
    const writable = await access(parent, constants.W_OK | constants.X_OK).then(
      () => true,
      () => false,
    );
    return writable
      ? {
          check,
          ok: true,
          detail: `${path} does not exist yet; the host-agent makes it (mode ${mode(rule.madeWith)}) at start`,
        }
      : {
          check,
          ok: false,
          detail: `${path} does not exist and cannot be made: ${parent} is not writable by this user`,
          fix: `mkdir -m ${mode(rule.madeWith).slice(1)} -p ${path} as root, then give it to the host-agent's user`,
        };
  }
  if (!info.isDirectory())
    return {
      check,
      ok: false,
      detail: `${path} is not a directory`,
      fix: `remove it, or choose another --${check}`,
    };
  const uid = process.geteuid?.();
  if (uid !== undefined && info.uid !== uid)
    return {
      check,
      ok: false,
      detail: `${path} belongs to uid ${info.uid}, not to this user (uid ${uid})`,
      fix: `chown ${uid} ${path} (the host-agent must own it), or run doctor as the host-agent's user`,
    };
  if ((info.mode & 0o700) !== 0o700)
    return {
      check,
      ok: false,
      detail: `${path} has mode ${mode(info.mode)}: its owner cannot use it`,
      fix: `chmod ${mode(rule.madeWith).slice(1)} ${path}`,
    };
  if ((info.mode & rule.forbidden) !== 0)
    return {
      check,
      ok: false,
      detail: `${path} has mode ${mode(info.mode)}: ${rule.why}`,
      fix: `chmod ${mode(rule.madeWith).slice(1)} ${path}`,
    };
  return { check, ok: true, detail: `${path} is a directory of uid ${info.uid}, mode ${mode(info.mode)}` };
}

export function checkSocketDir(path: string): Promise<DoctorFinding> {
  return checkDir(path, RULES.socket);
}

/** Temporary directories: emptied at boot or by age, so no place for the projects' workspaces. */
function temporary(path: string): string | null {
  for (const tmp of new Set([tmpdir(), "/tmp", "/var/tmp"]))
    if (path === tmp || path.startsWith(`${tmp}/`)) return tmp;
  return null;
}

export async function checkDataDir(path: string): Promise<DoctorFinding> {
  const tmp = temporary(path);
  if (tmp !== null)
    return {
      check: "data-dir",
      ok: false,
      detail: `${path} is under ${tmp}, which is emptied at boot or by age: the projects' workspaces would go with it`,
      fix: "set --data-dir (OUBLIETTE_DATA_DIR) to a lasting directory, e.g. /var/lib/oubliette, and keep it across restarts",
    };
  return checkDir(path, RULES.data);
}
