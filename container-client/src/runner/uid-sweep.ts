/**
 * Ends every process of one uid in this container. A session's uid is its own, so when the
 * session ends nothing of that uid may stay behind: not a daemon its agent forked out of its
 * process group, and not when the uid is handed to a later session. Reads `/proc/<pid>/status`
 * (readable by all) and needs CAP_KILL for processes of other uids (the runner has it).
 */
import { readProcesses } from "./process-table.js";

/** Most passes over /proc (a process may fork while we kill its siblings). */
const MAX_PASSES = 5;

/** Sends SIGKILL to every process whose real uid is `uid`; resolves with how many were signalled. */
export async function killUidProcesses(uid: number, procRoot = "/proc"): Promise<number> {
  if (uid === process.getuid?.()) return 0;
  let killed = 0;
  for (let pass = 0; pass < MAX_PASSES; pass += 1) {
    const pids = await pidsOfUid(uid, procRoot);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        killed += 1;
      } catch {
        // gone already, or not ours to signal
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return killed;
}

/** Pids whose real uid is `uid`. */
export async function pidsOfUid(uid: number, procRoot = "/proc"): Promise<number[]> {
  return (await readProcesses(procRoot)).filter((p) => p.uid === uid).map((p) => p.pid);
}
