/**
 * Asking: the workspace files an agent CLI would obey although they stop it asking, and that no
 * switch of ours turns off (`WorkspaceHazard`). Looked for before each start of the agent, in the
 * workspace and each directory above it up to its git root (where the CLIs look for project
 * settings); while one is there the agent does not start, with an error naming the file, rather
 * than run unasked what its session's policy asks about.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { WorkspaceHazard } from "../agents/driver.js";

/** A file is read up to this much to test its content (settings files are small). */
const READ_LIMIT = 1024 * 1024;

/** The workspace and the directories above it up to its git root (the workspace alone if none). */
export function projectDirs(cwd: string, exists: (path: string) => boolean = existsSync): string[] {
  const dirs: string[] = [];
  for (let dir = cwd; ; dir = dirname(dir)) {
    dirs.push(dir);
    if (exists(join(dir, ".git"))) return dirs;
    if (dirname(dir) === dir) return [cwd];
  }
}

/** Each hazard found, as "<path relative to the workspace>: <why>". */
export function findHazards(cwd: string, hazards: readonly WorkspaceHazard[]): string[] {
  if (hazards.length === 0) return [];
  const found: string[] = [];
  for (const root of projectDirs(cwd)) {
    for (const hazard of hazards) {
      const dir = join(root, hazard.dir);
      const name = new RegExp(hazard.name);
      for (const entry of entries(dir)) {
        if (!name.test(entry)) continue;
        const file = join(dir, entry);
        if (hazard.content !== undefined && !matches(file, new RegExp(hazard.content))) continue;
        found.push(`${relative(cwd, file) || entry}: ${hazard.why}`);
      }
    }
  }
  return found;
}

/** Refuses to start the agent while `hazards` are in its workspace. */
export function refuseHazards(runtime: string, cwd: string, hazards: readonly WorkspaceHazard[]): void {
  const found = findHazards(cwd, hazards);
  if (found.length === 0) return;
  throw new RpcError(
    RpcErrorCode.ServerError,
    `its session's approval policy asks, but the workspace holds ` +
      `settings ${runtime} would obey without asking, which it has no switch to ignore — ${found.join("; ")}. ` +
      "Remove them from the workspace, or run the session with another agent",
    { reason: "unsupported" },
  );
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function matches(file: string, content: RegExp): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    return content.test(readFileSync(file, "utf8").slice(0, READ_LIMIT));
  } catch {
    return false;
  }
}
