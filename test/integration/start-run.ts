/**
 * `npm start` (scripts/start.ts) as a real child process, for tests: its output, its exit, and
 * every process it started (recorded while it runs, so orphans are still known after it exits).
 * Each run gets its own state directory and runs droids as local processes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../../scripts/build.js";
import {
  descendantsOf,
  type ProcessInfo,
  readProcess,
  runningInGroups,
  stillRunning,
} from "./process-table.js";

export interface StartRun {
  child: ChildProcess;
  stateDir: string;
  /** stdout and stderr, interleaved as they came. */
  output(): string;
  /** Resolves with the first output line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every process seen below start.ts while it ran. */
  seen(): ProcessInfo[];
  /** Those of `seen()` (and members of their process groups) that still run. */
  leftovers(): ProcessInfo[];
  /** Test cleanup: SIGKILLs start.ts and whatever it started that still runs; removes the state. */
  dispose(): Promise<void>;
}

/**
 * How long a test of `npm start` may take: a start takes ~20 s on an idle two-core machine and
 * three times that in CI, beside two other files and the Docker images being built; a test that
 * starts it twice (a restart) needs twice that. waitForLine's own bound (90 s) ends a start that
 * never comes, with what it printed.
 */
export const START_TEST_MS = 200_000;

/**
 * Runs scripts/start.ts with `env` on top of a minimal environment; `files` are written into its
 * state directory first (e.g. a `.dev.vars`).
 */
export async function runStart(
  env: Record<string, string>,
  files: Record<string, string> = {},
): Promise<StartRun> {
  const stateDir = await mkdtemp(join(tmpdir(), "oubliette-start-"));
  for (const [name, text] of Object.entries(files))
    await writeFile(join(stateDir, name), text, { mode: 0o600 });
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? tmpdir(),
      OUBLIETTE_RUNTIME: "process",
      OUBLIETTE_STATE_DIR: stateDir,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  // Orphans leave the tree when their parent dies: record the tree while start.ts runs.
  const seen = new Map<string, ProcessInfo>();
  const record = () => {
    if (child.pid === undefined) return;
    for (const p of descendantsOf(child.pid)) {
      // Keep the last command line seen: a process seen between its fork and its exec still has
      // its parent's, and a zombie has lost its own (an empty one never replaces a known one).
      const key = `${p.pid}/${p.startTime}`;
      if (p.cmdline || !seen.has(key)) seen.set(key, p);
    }
  };
  const poll = setInterval(record, 50);
  void exited.then(() => clearInterval(poll));

  const waitForLine = (pattern: RegExp, timeoutMs = 90_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = text.split("\n").find((l) => pattern.test(l));
        if (line === undefined) return;
        finish();
        resolve(line);
      };
      const finish = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; output:\n${text}`));
      }, timeoutMs);
      listeners.add(check);
      check();
    });

  // start.ts itself runs in the test's process group (and so do its non-detached helpers, e.g.
  // esbuild's service): that group is checked process by process, not as a group.
  const ownGroup = readProcess(process.pid)?.pgid;
  const leftovers = () => {
    const all = [...seen.values()];
    const alive = all.filter(stillRunning);
    const inGroups = runningInGroups(new Set(all.map((p) => p.pgid).filter((g) => g !== ownGroup)));
    const byKey = new Map([...alive, ...inGroups].map((p) => [`${p.pid}/${p.startTime}`, p]));
    return [...byKey.values()];
  };

  return {
    child,
    stateDir,
    output: () => text,
    waitForLine,
    exited,
    seen: () => [...seen.values()],
    leftovers,
    async dispose() {
      clearInterval(poll);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      for (const p of leftovers()) {
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}
