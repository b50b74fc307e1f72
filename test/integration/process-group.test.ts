/**
 * A stack's child is stopped as a process group: a grandchild that ignores SIGTERM (as workerd
 * may) dies too, and so does one whose parent has already exited. Real processes throughout.
 */
import { expect, it } from "vitest";
import { exitOf, groupRunning, spawnGroup, stopGroup } from "../../scripts/stack/process-group.js";
import { readProcess, stillRunning } from "./process-table.js";

/** A node program that starts a SIGTERM-ignoring grandchild, prints its pid, then runs `then`. */
function parentOfStubborn(then: string, ignoreTerm: boolean) {
  const grandchild = `process.on("SIGTERM", () => {}); setInterval(() => {}, 1000);`;
  const code = `
    ${ignoreTerm ? 'process.on("SIGTERM", () => {});' : ""}
    const c = require("node:child_process").spawn(process.execPath, ["-e", ${JSON.stringify(grandchild)}], { stdio: "ignore" });
    console.log(c.pid);
    ${then}`;
  const child = spawnGroup(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "ignore"] });
  const grandchildPid = new Promise<number>((resolve) =>
    child.stdout?.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
  );
  return { child, grandchildPid };
}

async function settle(pid: number) {
  const info = readProcess(pid);
  if (!info) throw new Error(`process ${pid} is already gone`);
  // Give the grandchild a moment to install its SIGTERM handler.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return info;
}

it("kills a grandchild that ignores SIGTERM, after the grace period", async () => {
  const { child, grandchildPid } = parentOfStubborn("setInterval(() => {}, 1000);", true);
  const grandchild = await settle(await grandchildPid);
  const before = Date.now();
  await stopGroup(child, 500);
  expect(Date.now() - before).toBeGreaterThanOrEqual(450);
  expect(stillRunning(grandchild)).toBe(false);
  expect(groupRunning(child.pid ?? -1)).toBe(false);
  expect(await exitOf(child)).toEqual({ code: null, signal: "SIGKILL" });
});

it("stops a group whose leader has already exited (an orphaned workerd)", async () => {
  const { child, grandchildPid } = parentOfStubborn("setTimeout(() => process.exit(0), 200);", false);
  const grandchild = await settle(await grandchildPid);
  expect(await exitOf(child)).toEqual({ code: 0, signal: null });
  expect(stillRunning(grandchild)).toBe(true);
  await stopGroup(child, 300);
  expect(stillRunning(grandchild)).toBe(false);
});

it("returns at once when the leader stops on SIGTERM and nothing else is left", async () => {
  const child = spawnGroup(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const before = Date.now();
  await stopGroup(child, 10_000);
  expect(Date.now() - before).toBeLessThan(2_000);
  expect(await exitOf(child)).toEqual({ code: null, signal: "SIGTERM" });
});
