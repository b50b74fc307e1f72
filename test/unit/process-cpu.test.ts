/**
 * The relay bench's CPU reading (bench/process-cpu.ts), on this machine's /proc: the calling
 * process is the caller, CPU it burns shows up there, and the per-call figures divide what each
 * part spent between two readings.
 */
import { describe, expect, it } from "vitest";
import { CPU_PARTS, cpuPerCall, cpuUse } from "../../bench/process-cpu.js";

const pids = { devServer: -1, hostAgent: -1 };

describe("the bench's CPU by part of the stack", () => {
  it("counts this process as the caller, and what it burns", () => {
    const before = cpuUse(pids);
    expect(before).not.toBeNull();
    // Spin until the process has used 200 ms of CPU by its own count (however busy the machine).
    const start = process.cpuUsage();
    const giveUp = performance.now() + 10_000;
    let spin = 0;
    while (
      process.cpuUsage(start).user + process.cpuUsage(start).system < 200_000 &&
      performance.now() < giveUp
    )
      spin += Math.sqrt(spin + 1);
    const after = cpuUse(pids);
    expect(spin).toBeGreaterThan(0);
    // The same 200 ms, read from /proc in 10 ms ticks (each reading may round down by one).
    expect((after?.caller ?? 0) - (before?.caller ?? 0)).toBeGreaterThanOrEqual(180);
    for (const part of CPU_PARTS.filter((p) => p !== "caller" && p !== "container"))
      expect(after?.[part]).toBe(0);
  });

  it("divides each part's CPU between two readings by the calls", () => {
    const zero = Object.fromEntries(CPU_PARTS.map((p) => [p, 0])) as Record<
      (typeof CPU_PARTS)[number],
      number
    >;
    const later = { ...zero, caller: 500, worker: 1000, "dev-server": 250 };
    const { parts, total } = cpuPerCall(zero, later, 250);
    expect(parts).toEqual({ ...zero, caller: 2, worker: 4, "dev-server": 1 });
    expect(total).toBe(7);
  });
});
