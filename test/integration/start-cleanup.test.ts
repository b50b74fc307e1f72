/**
 * `npm start` leaves nothing behind and says one line: when a step fails after wrangler is up,
 * on SIGTERM in the middle of starting, on SIGHUP once running. And it keeps its host-agent
 * running: a host-agent that dies is reported in one line and started again.
 * Every process is identified by pid and start time among those this run started.
 */
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import { buildAll } from "../../scripts/build.js";
import { freePort } from "../../scripts/stack/port.js";
import { stillRunning } from "./process-table.js";
import { runStart, START_TEST_MS, type StartRun } from "./start-run.js";

vi.setConfig({ testTimeout: START_TEST_MS });

const runs: StartRun[] = [];

beforeAll(async () => {
  await buildAll();
});

afterEach(async () => {
  await Promise.all(runs.splice(0).map((run) => run.dispose()));
});

async function start(env: Record<string, string> = {}): Promise<StartRun> {
  const run = await runStart({ PORT: String(await freePort()), ...env });
  runs.push(run);
  return run;
}

const isWorkerd = (cmdline: string) => /workerd serve/.test(cmdline);
const isHostAgent = (cmdline: string) => /host-agent\.mjs/.test(cmdline);

it("a host-agent that cannot start: one clear line, exit 1, no wrangler or workerd left", async () => {
  // The host-agent refuses a zero session limit at start-up, after wrangler is serving.
  const run = await start({ OUBLIETTE_MAX_SESSIONS: "0" });
  expect(await run.exited).toEqual({ code: 1, signal: null });
  const lines = run.output().trimEnd().split("\n");
  expect(lines.at(-1)).toMatch(
    /^oubliette: host-agent local-[0-9a-f]{10} exited \(code 2\) before it registered; see \S+\.log$/,
  );
  expect(run.output()).not.toMatch(/^\s+at /m);
  // wrangler really was up: its workerd was seen.
  expect(run.seen().some((p) => isWorkerd(p.cmdline))).toBe(true);
  expect(run.leftovers()).toEqual([]);
});

it("SIGTERM while wrangler is starting stops it, workerd included", async () => {
  const run = await start();
  await expect.poll(() => run.seen().some((p) => isWorkerd(p.cmdline)), { timeout: 120_000 }).toBe(true);
  run.child.kill("SIGTERM");
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(run.output()).not.toMatch(/^\s+at /m);
  expect(run.leftovers()).toEqual([]);
});

it("a host-agent that dies is reported in one line and restarted; SIGHUP then stops everything", async () => {
  const run = await start();
  await run.waitForLine(/Press Ctrl-C to stop/);
  const agent = run.seen().find((p) => isHostAgent(p.cmdline) && stillRunning(p));
  expect(agent).toBeDefined();
  process.kill(agent?.pid ?? -1, "SIGKILL");
  const line = await run.waitForLine(/exited \(signal SIGKILL\)/);
  expect(line).toMatch(
    /^oubliette: host-agent local-[0-9a-f]{10} exited \(signal SIGKILL\); restarting in 1 s; see \S+\.log$/,
  );
  await run.waitForLine(/host-agent local-[0-9a-f]{10} restarted$/, 30_000);
  const replacement = run.seen().find((p) => isHostAgent(p.cmdline) && stillRunning(p));
  expect(replacement?.pid).not.toBe(agent?.pid);
  run.child.kill("SIGHUP");
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(run.leftovers()).toEqual([]);
});
