/**
 * Runs apt-get without a shell, non-interactively, streaming its output as progress lines so a
 * user watching `npm test` on a bare machine sees why it is slow. Another package manager at work
 * (an `apt-get` of the user's, a machine updating itself) holds apt's locks: apt-get then waits for
 * them, up to LOCK_WAIT_MS, rather than failing at once, and says once that it waits.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerUnavailableError } from "../../host-agent/src/images/errors.js";

const KEPT_LINES = 30;

/** How long apt-get waits for another package manager to let go of its lock. */
export const LOCK_WAIT_MS = 10 * 60_000;

/** How often a lock apt-get does not wait for itself (the package lists') is tried again. */
const LOCK_RETRY_MS = 2_000;

/**
 * apt's words for a lock another process holds (apt 2.x: "Could not get lock <file>. It is held by
 * process <pid> (<name>)"), as a failure or, while `DPkg::Lock::Timeout` runs, prefixed with
 * "Waiting for cache lock: " every second. apt-get says it only in words (its exit code is 100 for
 * every error), so these are read, in apt's untranslated words (LC_ALL=C).
 */
const LOCK_HELD = /Could not get lock (\S+?)\.? It is held by process (\d+)(?: \(([^)]*)\))?/;
const WAITING = /^Waiting for cache lock: /;

/** Who holds an apt or dpkg lock: the lock file, the process and its name. */
export interface LockHolder {
  lock: string;
  pid: number;
  name: string | null;
}

/** Who holds a lock, as an output line of apt-get says; null when it says nothing of one. */
export function lockHolder(line: string): LockHolder | null {
  const held = LOCK_HELD.exec(line);
  if (held?.[1] === undefined || held[2] === undefined) return null;
  return { lock: held[1], pid: Number(held[2]), name: held[3] ?? null };
}

/**
 * apt-get's arguments: `args` after the option that makes it wait for the dpkg locks (an install's)
 * instead of failing at once. The package lists' lock (an update's) it does not wait for: runApt
 * tries again while that one is held.
 */
export function aptArgs(args: readonly string[], waitMs: number = LOCK_WAIT_MS): string[] {
  return ["-o", `DPkg::Lock::Timeout=${Math.ceil(waitMs / 1000)}`, ...args];
}

/** The one line that says apt-get waits for a lock. */
export function waitingLine(holder: LockHolder, waitMs: number): string {
  const who = holder.name === null ? `process ${holder.pid}` : `${holder.name} (process ${holder.pid})`;
  return (
    `another package manager holds ${holder.lock}: ${who}; waiting for it ` +
    `(up to ${Math.round(waitMs / 60_000)} min)`
  );
}

/** How one run of apt-get ended: its exit code (null: it could not run) and what kept it from running. */
export interface AptRun {
  code: number | null;
  error?: Error;
}

export interface AptOptions {
  /** How long to wait for another package manager's lock (default LOCK_WAIT_MS). */
  lockWaitMs?: number;
  /** Runs apt-get with these arguments, each output line to `line` (default: the real apt-get). */
  run?: (args: string[], line: (text: string) => void) => Promise<AptRun>;
  /** The clock and the pause between tries (tests pass their own). */
  now?: () => number;
  pause?: (ms: number) => Promise<void>;
}

/** Runs `apt-get <args>`; throws DockerUnavailableError("apt_failed") with the output's tail on failure. */
export async function runApt(
  args: string[],
  log: (line: string) => void,
  options: AptOptions = {},
): Promise<void> {
  const waitMs = options.lockWaitMs ?? LOCK_WAIT_MS;
  const run = options.run ?? spawnApt;
  const now = options.now ?? Date.now;
  const pause = options.pause ?? ((ms: number) => sleep(ms));
  const deadline = now() + waitMs;
  const argv = aptArgs(args, waitMs);
  log(`apt-get ${args.join(" ")}`);
  let saidWaiting = false;
  let retrying = false;
  for (;;) {
    const recent: string[] = [];
    const held: LockHolder[] = [];
    // A try that may be tried again (one after a refused lock, or after this one's refusal) keeps
    // its lines until that is known: shown only if it is the last.
    let quiet = retrying;
    const kept: string[] = [];
    const result = await run(argv, (line) => {
      recent.push(line);
      if (recent.length > KEPT_LINES) recent.shift();
      const holder = lockHolder(line);
      if (holder !== null) {
        held.push(holder);
        // apt repeats its words every second while it waits itself: said once, in ours.
        if (!saidWaiting) log(waitingLine(holder, waitMs));
        saidWaiting = true;
        if (!WAITING.test(line)) quiet = true;
        return;
      }
      if (quiet) kept.push(`  apt: ${line}`);
      else log(`  apt: ${line}`);
    });
    const holder = held.at(-1);
    if (result.code !== 0 && result.error === undefined && holder !== undefined && now() < deadline) {
      retrying = true;
      await pause(Math.min(LOCK_RETRY_MS, deadline - now()));
      continue;
    }
    for (const line of kept) log(line);
    if (result.code === 0) return;
    const why = result.error ? result.error.message : `exit code ${result.code}`;
    const waited =
      holder !== undefined ? `; the lock stayed held for ${Math.round(waitMs / 60_000)} min` : "";
    throw new DockerUnavailableError(
      "apt_failed",
      `apt-get ${args.join(" ")} failed (${why}${waited}). Last output:\n${recent.join("\n")}`,
    );
  }
}

/** The real apt-get, its stdout and stderr lines to `line`. */
function spawnApt(args: string[], line: (text: string) => void): Promise<AptRun> {
  const child = spawn("apt-get", args, {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive", LC_ALL: "C" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  createInterface({ input: child.stdout }).on("line", line);
  createInterface({ input: child.stderr }).on("line", line);
  return new Promise((resolve) => {
    child.once("error", (error) => resolve({ code: null, error }));
    child.once("close", (code) => resolve({ code }));
  });
}
