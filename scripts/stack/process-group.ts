/**
 * Children that run in their own process group, and stop as a group.
 *
 * The Worker's local server runs workerd as its own child, and workerd may ignore SIGTERM; a host-agent runs
 * droids as children. Signalling only the direct child can leave those behind, so every child of
 * the stack is started as the leader of a new process group (`detached`) and stopped by
 * signalling the whole group. A detached child no longer gets the terminal's Ctrl-C: whoever
 * starts one must stop it (start.ts forwards SIGINT, SIGTERM and SIGHUP; see `killGroupsNow`).
 */
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Process groups started here and not yet seen empty. */
const liveGroups = new Set<number>();

/** Spawns `command` as the leader of a new process group. */
export function spawnGroup(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid !== undefined) liveGroups.add(child.pid);
  return child;
}

/** Resolves with the child's exit code or signal (at once if it has already exited). */
export function exitOf(child: ChildProcess): Promise<ExitInfo> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/** "code 2" or "signal SIGKILL", for one-line messages. */
export function describeExit(exit: ExitInfo): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/**
 * Stops a child's whole process group: SIGTERM to the group, SIGKILL to the group after
 * `graceMs`; resolves when the leader has exited and no member of the group is left running.
 */
export async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  const pgid = child.pid;
  // Stopped before: its pid (and so the group id) may belong to someone else by now.
  if (pgid === undefined || !liveGroups.has(pgid)) return;
  const leaderExited = exitOf(child);
  let leaderGone = false;
  void leaderExited.then(() => {
    leaderGone = true;
  });
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && !(leaderGone && !groupRunning(pgid))) await sleep(50);
  if (groupRunning(pgid)) {
    signalGroup(pgid, "SIGKILL");
    // SIGKILL cannot be ignored; the wait is bounded only against a process stuck in the kernel.
    const killDeadline = Date.now() + 5_000;
    while (groupRunning(pgid) && Date.now() < killDeadline) await sleep(20);
  }
  if (!leaderGone) await Promise.race([leaderExited, sleep(1_000)]);
  if (!groupRunning(pgid)) liveGroups.delete(pgid);
}

/**
 * SIGKILLs every group started here that may still run. Synchronous, for `process.on("exit")`:
 * the last resort when the parent exits without having stopped its children.
 */
export function killGroupsNow(): void {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  liveGroups.clear();
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * Whether any member of the group is still running. On Linux, /proc tells zombies apart: a
 * killed workerd whose parent died first stays a zombie where PID 1 does not reap (containers);
 * it holds no memory and must not count. Elsewhere, `kill(-pgid, 0)` answers.
 */
export function groupRunning(pgid: number): boolean {
  if (!existsSync("/proc/self/stat")) {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat && stat.pgid === pgid && stat.state !== "Z" && stat.state !== "X") return true;
  }
  return false;
}

/** State and process group of a process from /proc/<pid>/stat (undefined once it is gone). */
export function procStat(pid: number): { state: string; ppid: number; pgid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself contain spaces or parentheses.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, ppid, pgid] = fields;
  if (state === undefined || ppid === undefined || pgid === undefined) return undefined;
  return { state, ppid: Number(ppid), pgid: Number(pgid) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
