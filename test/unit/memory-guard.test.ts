import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readContainerMemory } from "../../container-client/src/runner/memory-cgroup.js";
import {
  describeVictim,
  MemoryGuard,
  memoryReserve,
  pickVictim,
} from "../../container-client/src/runner/memory-guard.js";
import { parseStatus, readProcesses } from "../../container-client/src/runner/process-table.js";
import { createLogger } from "../../lib/log.js";

const MiB = 1024 * 1024;
const silentLogger = () => createLogger({ name: "memory-guard-test", level: "silent", fd: 2 });

function dir(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "oub-cgroup-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe("the container's memory, as its cgroup counts it", () => {
  it("reads cgroup v2: the limit, and the working set without the inactive file cache", async () => {
    const root = dir({
      "memory.max": `${512 * MiB}\n`,
      "memory.current": `${400 * MiB}\n`,
      "memory.stat": `anon ${300 * MiB}\nfile ${100 * MiB}\ninactive_file ${60 * MiB}\nactive_file ${40 * MiB}\n`,
    });
    expect(await readContainerMemory(root)).toEqual({ limitBytes: 512 * MiB, workingSetBytes: 340 * MiB });
  });

  it("reads cgroup v1 (memory/…, total_inactive_file)", async () => {
    const root = dir({
      "memory/memory.limit_in_bytes": `${1024 * MiB}\n`,
      "memory/memory.usage_in_bytes": `${900 * MiB}\n`,
      "memory/memory.stat": `cache ${200 * MiB}\ninactive_file 1\ntotal_inactive_file ${150 * MiB}\n`,
    });
    expect(await readContainerMemory(root)).toEqual({ limitBytes: 1024 * MiB, workingSetBytes: 750 * MiB });
  });

  it("has nothing to guard without a limit, or without a cgroup", async () => {
    expect(await readContainerMemory(dir({ "memory.max": "max\n", "memory.current": "1\n" }))).toBeNull();
    const v1 = dir({
      "memory/memory.limit_in_bytes": "9223372036854771712\n",
      "memory/memory.usage_in_bytes": "1\n",
    });
    expect(await readContainerMemory(v1)).toBeNull();
    expect(await readContainerMemory(dir({}))).toBeNull();
  });
});

describe("the process table", () => {
  it("parses a status file: real uid, parent, name and resident memory", () => {
    const status =
      "Name:\tnode\nState:\tS (sleeping)\nPPid:\t17\nUid:\t30001\t30001\t30001\t30001\nVmRSS:\t  310512 kB\n";
    expect(parseStatus(42, status)).toEqual({
      pid: 42,
      ppid: 17,
      uid: 30001,
      name: "node",
      rssBytes: 310512 * 1024,
    });
    // A zombie has no VmRSS; a status that is gone is no process.
    expect(parseStatus(43, "Name:\tsh\nPPid:\t1\nUid:\t0\t0\t0\t0\n")).toMatchObject({ rssBytes: 0 });
    expect(parseStatus(44, "")).toBeNull();
  });

  it("reads this machine's own /proc, this process among them", async () => {
    const mine = (await readProcesses()).find((p) => p.pid === process.pid);
    expect(mine?.uid).toBe(process.getuid?.());
    expect(mine?.rssBytes).toBeGreaterThan(0);
  });
});

describe("the memory guard", () => {
  const limit = 512 * MiB;
  const procs = [
    { pid: 1, ppid: 0, uid: 0, name: "tini", rssBytes: 1 * MiB },
    { pid: 7, ppid: 1, uid: 0, name: "node", rssBytes: 900 * MiB }, // the runner: never chosen
    { pid: 20, ppid: 7, uid: 30001, name: "droid", rssBytes: 40 * MiB },
    { pid: 21, ppid: 20, uid: 30001, name: "hog", rssBytes: 300 * MiB },
    { pid: 30, ppid: 7, uid: 30002, name: "node", rssBytes: 260 * MiB },
  ];

  function guard(workingSet: number) {
    const killed: number[] = [];
    const told: string[] = [];
    const g = new MemoryGuard({
      read: async () => ({ limitBytes: limit, workingSetBytes: workingSet }),
      processes: async () => procs,
      kill: (pid) => killed.push(pid),
      ended: (victim) => told.push(describeVictim(victim)),
      logger: silentLogger(),
      ownUid: 0,
      settleMs: 60_000,
    });
    return { g, killed, told };
  }

  it("keeps a reserve of a tenth of the limit, between 32 and 128 MiB", () => {
    expect(memoryReserve(512 * MiB)).toBe(Math.round(51.2 * MiB));
    expect(memoryReserve(128 * MiB)).toBe(32 * MiB);
    expect(memoryReserve(8192 * MiB)).toBe(128 * MiB);
  });

  it("does nothing while the working set leaves the reserve free", async () => {
    const { g, killed } = guard(limit - memoryReserve(limit) - 1);
    expect(await g.check()).toBeNull();
    expect(killed).toEqual([]);
  });

  it("ends the biggest process that is not the runner's, says whose and how much, then lets it settle", async () => {
    const { g, killed, told } = guard(limit - 10 * MiB);
    const victim = await g.check();
    expect(victim?.process).toMatchObject({ pid: 21, uid: 30001 });
    expect(killed).toEqual([21]);
    expect(told[0]).toBe(
      "out of memory: hog (pid 21) held 300 MiB when the container was at 502 MiB of its 512 MiB limit " +
        "(the project's limits.memory_mb); it was ended so the project's other sessions keep running",
    );
    // Its memory is given time to be freed before the next judgement.
    expect(await g.check()).toBeNull();
    expect(killed).toEqual([21]);
  });

  it("counts a uid's processes together: many small ones do not get another session's agent ended", () => {
    const spread = [
      ...Array.from({ length: 8 }, (_, i) => ({
        pid: 100 + i,
        ppid: 1,
        uid: 30003,
        name: "w",
        rssBytes: 50 * MiB,
      })),
      { pid: 200, ppid: 1, uid: 30004, name: "agent", rssBytes: 300 * MiB },
      { pid: 7, ppid: 1, uid: 0, name: "runner", rssBytes: 999 * MiB },
    ];
    expect(pickVictim(spread, 0)).toMatchObject({ pid: 100, uid: 30003 });
    expect(pickVictim([{ pid: 7, ppid: 1, uid: 0, name: "runner", rssBytes: MiB }], 0)).toBeNull();
  });

  it("has nothing to judge without a limit", async () => {
    const g = new MemoryGuard({
      read: async () => null,
      processes: async () => procs,
      kill: () => {
        throw new Error("never");
      },
      ended: () => {},
      logger: silentLogger(),
      ownUid: 0,
    });
    expect(await g.check()).toBeNull();
  });
});
