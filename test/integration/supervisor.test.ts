/**
 * The supervisor that keeps `npm start`'s host-agent running, driven with real child processes
 * (tiny `node -e` programs) and short delays.
 */
import { afterEach, expect, it } from "vitest";
import { exitOf, spawnGroup, stopGroup } from "../../scripts/stack/process-group.js";
import { type Supervised, Supervisor, type SupervisorOptions } from "../../scripts/stack/supervisor.js";

interface Child extends Supervised {
  pid: number;
}

const spawned: Child[] = [];

// Each child is a fresh node process: on a busy 2-core machine (other files start wrangler dev
// meanwhile) one may take seconds to start.
const SLOW = { timeout: 30_000 };

/** A real child running `code` (in its own process group, like the host-agent). */
function nodeChild(code: string): Child {
  const child = spawnGroup(process.execPath, ["-e", code], { stdio: "ignore" });
  const handle = { pid: child.pid ?? 0, exited: exitOf(child), stop: () => stopGroup(child, 1_000) };
  spawned.push(handle);
  return handle;
}

const exitAt = (ms: number, code: number) => nodeChild(`setTimeout(() => process.exit(${code}), ${ms})`);
const runForever = () => nodeChild("setInterval(() => {}, 1000)");

afterEach(async () => {
  await Promise.all(spawned.splice(0).map((c) => c.stop()));
});

/** A supervisor whose reports are collected; `done` settles when it gives up. */
function supervise(
  options: Partial<SupervisorOptions<Child>> & Pick<SupervisorOptions<Child>, "first" | "restart">,
) {
  const reports: string[] = [];
  let gaveUp: (line: string) => void = () => {};
  const done = new Promise<string>((resolve) => {
    gaveUp = resolve;
  });
  const supervisor = new Supervisor<Child>({
    name: "test-child",
    logFile: "/tmp/test-child.log",
    report: (line) => reports.push(line),
    onGiveUp: (line) => gaveUp(line),
    initialDelayMs: 10,
    maxDelayMs: 40,
    stableMs: 60_000,
    maxFastFailures: 5,
    ...options,
  });
  return { supervisor, reports, done };
}

it("reports an unexpected exit in one line (code and log file) and starts a new child", async () => {
  const replacement = { current: undefined as Child | undefined };
  const { supervisor, reports } = supervise({
    first: exitAt(50, 3),
    restart: async () => {
      replacement.current = runForever();
      return replacement.current;
    },
  });
  await expect.poll(() => reports.length, SLOW).toBe(2);
  expect(reports[0]).toBe(
    "oubliette: test-child exited (code 3); restarting in 10 ms; see /tmp/test-child.log",
  );
  expect(reports[1]).toBe("oubliette: test-child restarted");
  expect(supervisor.current).toBe(replacement.current);
  await supervisor.stop();
  // Stopping the supervisor stops its child; a stopped child is not restarted.
  expect(await replacement.current?.exited).toEqual({ code: null, signal: "SIGTERM" });
  expect(reports).toHaveLength(2);
});

it("names the signal when the child was killed", async () => {
  const { supervisor, reports } = supervise({
    first: nodeChild("process.kill(process.pid, 'SIGKILL')"),
    restart: async () => runForever(),
  });
  await expect
    .poll(() => reports[0], SLOW)
    .toMatch(/^oubliette: test-child exited \(signal SIGKILL\); restarting in/);
  await supervisor.stop();
});

it("backs off 10, 20, 40, 40 ms (capped) and gives up after 5 fast failures in a row", async () => {
  let starts = 0;
  const { reports, done } = supervise({
    first: exitAt(0, 1),
    restart: async () => {
      starts += 1;
      return exitAt(0, 1);
    },
  });
  const line = await done;
  expect(line).toBe(
    "oubliette: test-child exited (code 1); it failed 5 times in a row, giving up; see /tmp/test-child.log",
  );
  expect(reports.filter((r) => r.includes("restarting")).map((r) => /in (\d+ ms)/.exec(r)?.[1])).toEqual([
    "10 ms",
    "20 ms",
    "40 ms",
    "40 ms",
  ]);
  expect(starts).toBe(4);
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(starts).toBe(4);
});

it("starts counting again after a child that stayed up for the stable period", async () => {
  let starts = 0;
  const { supervisor, reports, done } = supervise({
    first: exitAt(120, 1),
    restart: async () => {
      starts += 1;
      return exitAt(120, 1);
    },
    stableMs: 100,
    maxFastFailures: 2,
  });
  let gaveUp = false;
  void done.then(() => {
    gaveUp = true;
  });
  await expect.poll(() => starts, SLOW).toBeGreaterThanOrEqual(4);
  expect(gaveUp).toBe(false);
  // The backoff starts over too: every wait is the first one.
  expect(
    reports.filter((r) => r.includes("restarting")).every((r) => r.includes("restarting in 10 ms")),
  ).toBe(true);
  await supervisor.stop();
});

it("counts a replacement that cannot start as a failure, with its reason", async () => {
  let starts = 0;
  const { supervisor, reports } = supervise({
    first: exitAt(0, 1),
    restart: async () => {
      starts += 1;
      if (starts === 1) throw new Error("the worker refused this host");
      return runForever();
    },
  });
  await expect.poll(() => reports.length, SLOW).toBe(3);
  expect(reports[1]).toBe(
    "oubliette: test-child could not start: the worker refused this host; restarting in 20 ms; see /tmp/test-child.log",
  );
  expect(reports[2]).toBe("oubliette: test-child restarted");
  await supervisor.stop();
});

it("stop() during the backoff cancels the restart", async () => {
  let starts = 0;
  const { supervisor, reports } = supervise({
    first: exitAt(0, 1),
    restart: async () => {
      starts += 1;
      return runForever();
    },
    // A backoff long enough that stop() surely comes first (the default cap here is 40 ms).
    initialDelayMs: 10_000,
    maxDelayMs: 10_000,
  });
  await expect.poll(() => reports.length, SLOW).toBe(1);
  const before = Date.now();
  await supervisor.stop();
  expect(Date.now() - before).toBeLessThan(5_000);
  expect(starts).toBe(0);
});

it("a start that completes after stop() is stopped at once", async () => {
  let late: Child | undefined;
  const { supervisor, reports } = supervise({
    first: exitAt(0, 1),
    restart: async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      late = runForever();
      return late;
    },
  });
  await expect.poll(() => reports.length, SLOW).toBe(1);
  await new Promise((resolve) => setTimeout(resolve, 50));
  await supervisor.stop();
  expect(late).toBeDefined();
  expect(await late?.exited).toEqual({ code: null, signal: "SIGTERM" });
});
