/**
 * `npm start` / `npm test` installing Docker with apt-get on a machine where another package
 * manager is at work (an apt-get of the user's, the machine updating itself): apt-get waits for
 * the lock instead of failing at once, and says once that it waits. apt-get is a stand-in here
 * speaking apt 2.6's words (seen running the real one with a lock held); the clock is fake.
 */
import { describe, expect, it } from "vitest";
import { type AptRun, aptArgs, LOCK_WAIT_MS, lockHolder, runApt } from "../../scripts/docker/apt.js";

const FRONTEND_HELD =
  "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 6077 (apt-get)...";
const LISTS_HELD =
  "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 7371 (unattended-upgr)";

/** A fake apt-get: each run prints the lines of the next script entry and exits with its code. */
function fakeApt(runs: Array<{ lines: string[]; code: number }>) {
  const calls: string[][] = [];
  let clock = 0;
  return {
    calls,
    now: () => clock,
    pause: async (ms: number) => {
      clock += ms;
    },
    run: async (args: string[], line: (text: string) => void): Promise<AptRun> => {
      calls.push(args);
      const next = runs[Math.min(calls.length - 1, runs.length - 1)] ?? { lines: [], code: 0 };
      for (const text of next.lines) line(text);
      return { code: next.code };
    },
  };
}

describe("apt-get and another package manager's lock", () => {
  it("asks apt-get to wait for the dpkg locks (install) rather than fail at once", () => {
    expect(aptArgs(["install", "-y", "docker.io"])).toEqual([
      "-o",
      `DPkg::Lock::Timeout=${LOCK_WAIT_MS / 1000}`,
      "install",
      "-y",
      "docker.io",
    ]);
    expect(LOCK_WAIT_MS).toBeGreaterThanOrEqual(5 * 60_000);
  });

  it("reads who holds a lock from apt's words, and nothing from other lines", () => {
    expect(lockHolder(FRONTEND_HELD)).toEqual({
      lock: "/var/lib/dpkg/lock-frontend",
      pid: 6077,
      name: "apt-get",
    });
    expect(lockHolder(LISTS_HELD)).toEqual({
      lock: "/var/lib/apt/lists/lock",
      pid: 7371,
      name: "unattended-upgr",
    });
    expect(lockHolder("Reading package lists...")).toBeNull();
  });

  it("while apt-get waits for the dpkg lock, says so once (not every second), then shows the install", async () => {
    const apt = fakeApt([
      {
        lines: [
          FRONTEND_HELD,
          FRONTEND_HELD,
          FRONTEND_HELD,
          "Reading package lists...",
          "Setting up docker.io",
        ],
        code: 0,
      },
    ]);
    const log: string[] = [];
    await runApt(["install", "-y", "docker.io"], (l) => log.push(l), apt);
    expect(apt.calls).toEqual([aptArgs(["install", "-y", "docker.io"])]);
    expect(log).toEqual([
      "apt-get install -y docker.io",
      "another package manager holds /var/lib/dpkg/lock-frontend: apt-get (process 6077); waiting for it (up to 10 min)",
      "  apt: Reading package lists...",
      "  apt: Setting up docker.io",
    ]);
  });

  it("the package lists' lock (an update's, which apt-get does not wait for): tries again until it is free", async () => {
    const held = {
      lines: ["Reading package lists...", LISTS_HELD, "E: Unable to lock directory /var/lib/apt/lists/"],
      code: 100,
    };
    const apt = fakeApt([
      held,
      held,
      held,
      { lines: ["Hit:1 http://deb.debian.org bookworm InRelease"], code: 0 },
    ]);
    const log: string[] = [];
    await runApt(["update"], (l) => log.push(l), apt);
    expect(apt.calls).toHaveLength(4);
    expect(log).toEqual([
      "apt-get update",
      "  apt: Reading package lists...",
      "another package manager holds /var/lib/apt/lists/lock: unattended-upgr (process 7371); waiting for it (up to 10 min)",
      // The failed tries say nothing more; the one that got the lock is shown.
      "  apt: Hit:1 http://deb.debian.org bookworm InRelease",
    ]);
  });

  it("a lock held past the wait fails, saying it was held", async () => {
    const apt = fakeApt([{ lines: [LISTS_HELD], code: 100 }]);
    const failed = runApt(["update"], () => {}, { ...apt, lockWaitMs: 60_000 });
    await expect(failed).rejects.toThrow(
      /apt-get update failed \(exit code 100; the lock stayed held for 1 min\)/,
    );
    expect(apt.now()).toBe(60_000);
  });

  it("any other failure fails at once", async () => {
    const apt = fakeApt([{ lines: ["E: Unable to locate package docker.io"], code: 100 }]);
    await expect(runApt(["install", "-y", "docker.io"], () => {}, apt)).rejects.toThrow(
      /exit code 100\)\. Last output:\nE: Unable to locate package docker\.io/,
    );
    expect(apt.calls).toHaveLength(1);
  });
});
