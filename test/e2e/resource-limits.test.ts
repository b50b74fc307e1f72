/**
 * A project's resource limits end to end: the Worker under wrangler dev, a Docker host-agent
 * (root, so each project's volume is a loop-mounted filesystem of its size), scripted droids.
 * - Disk: a droid of a project bounded at 256 MiB tries to write 600 MiB into its workspace: the
 *   kernel stops it at the bound, its session gets a `disk_limit` event and ends, a new session
 *   there is refused; a second project on the same host keeps running; the first one's workspace
 *   stays readable.
 * - Memory: in a 512 MiB project, two sessions' agents each take about 60 % of the limit and
 *   keep their pages in use for a minute. The runner's memory guard ends the agent holding the
 *   most before the kernel stalls the container: that session ends saying so, with the limit; the
 *   runner (same pid) keeps answering the host's pings; a third session answers every message
 *   within seconds throughout. A command that takes too much is ended and its session told, and
 *   goes on. An agent that takes 2 GiB at once is killed by the kernel; its session ends saying why.
 */
import { readFileSync } from "node:fs";
import Dockerode from "dockerode";
import { describe, expect, it } from "vitest";
import { dockerContext } from "../support/docker-context.js";
import { containerProcesses, envValue, projectContainer } from "../support/docker-exec.js";
import { dockerStack } from "./docker-stack.js";
import { runStep } from "./support.js";

const e2e = dockerStack();
const MIB = 1024 * 1024;

/** Writes up to `mb` MiB into `file`, 1 MiB at a time, and prints how far it got and why it stopped. */
const FILL = `
const fs = require("node:fs");
const [file, mb] = [process.argv[1], Number(process.argv[2])];
const chunk = Buffer.alloc(1024 * 1024, 7);
const fd = fs.openSync(file, "w");
let written = 0, error = null;
try { for (let i = 0; i < mb; i++) written += fs.writeSync(fd, chunk); }
catch (e) { error = e.code; }
try { fs.closeSync(fd); } catch {}
console.log(JSON.stringify({ written, error }));`;

async function project(limits: Record<string, unknown>): Promise<string> {
  const created = await e2e.caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `disk-${crypto.randomUUID().slice(0, 8)}`,
    limits,
  });
  return created.project_id;
}

async function spawn(projectId: string): Promise<string> {
  const { session_id } = await e2e.caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
  });
  await e2e.caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
  return session_id;
}

describe("a project's disk bound", () => {
  it("stops a project at its bound with a disk_limit event; another project runs on; the workspace stays", async () => {
    const bounded = await project({ disk_mb: 256 });
    const other = await project({});
    const filler = await spawn(bounded);
    const bystander = await spawn(other);
    // Its bound is its own; the other's is the host's default; the host keeps them as filesystems.
    const info = (id: string) =>
      e2e.caller.ok<{ disk: Record<string, unknown> }>("project", { action: "get", project_id: id });
    expect((await info(bounded)).disk).toEqual({ limit_mb: 256, source: "project", mode: "filesystem" });
    expect((await info(other)).disk).toEqual({
      limit_mb: 10_240,
      source: "host_default",
      mode: "filesystem",
    });

    // The droid writes 600 MiB into its workspace (it is stopped on the way: no need to hear from it).
    const fill = {
      id: "fill",
      steps: [{ op: "exec", argv: ["node", "-e", FILL, "big.bin", "600"], timeout_ms: 120_000 }],
    };
    await e2e.caller.ok("session", { action: "message", session_id: filler, message: JSON.stringify(fill) });
    const limit = await e2e.caller.waitFor(
      (e) => e.session_id === filler && e.type === "disk_limit",
      120_000,
      "the disk_limit event",
    );
    expect(limit).toMatchObject({ limit_mb: 256, message: expect.stringContaining("disk bound") });
    expect((limit as { used_mb: number }).used_mb).toBeLessThanOrEqual(256 + 16);
    await e2e.caller.waitFor(
      (e) => e.session_id === filler && e.type === "session_ended" && e.reason.includes("disk_limit"),
      30_000,
      "the filler's end",
    );

    // While it is at its bound the project starts nothing new, and says why.
    const refused = await e2e.caller.call("session", {
      action: "spawn",
      project_id: bounded,
      new_session: true,
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("disk bound");

    // The other project's session goes on as if nothing happened.
    expect(await runStep(e2e.caller, bystander, { op: "fs", action: "whoami" })).toMatchObject({ ok: true });

    // The bounded project's workspace is still there to read (and clean up), and the kernel
    // stopped the file at the bound (the filesystem keeps a little for itself).
    const listed = await e2e.caller.ok<{ exit_code: number; stdout: string }>("container", {
      action: "exec",
      project_id: bounded,
      command: ["stat", "-c", "%s", "/workspace/default/big.bin"],
    });
    expect(listed.exit_code).toBe(0);
    const size = Number(listed.stdout.trim());
    expect(size).toBeLessThanOrEqual(256 * MIB);
    expect(size).toBeGreaterThan(200 * MIB);

    for (const id of [bounded, other])
      await e2e.caller.call("project", { action: "delete", project_id: id, force: true });
  }, 300_000);
});

/** Takes `mb` MiB, 8 MiB every 100 ms, keeps every page in use for `ms`, and prints what it held. */
const HOLD = `
const [mb, ms] = [Number(process.argv[1]), Number(process.argv[2])];
const held = [], started = Date.now();
const sleep = (t) => new Promise((r) => setTimeout(r, t));
(async () => {
  for (let taken = 0; taken < mb; taken += 8) { held.push(Buffer.alloc(8 * 1024 * 1024, 1)); await sleep(100); }
  for (let round = 1; Date.now() - started < ms; round++) {
    for (const b of held) for (let at = 0; at < b.length; at += 4096) b[at] = round & 0xff;
    await sleep(500);
  }
  console.log(JSON.stringify({ held_mb: held.length * 8 }));
})();`;

/** The runner's pid (host view): the root process holding the runner's secret. */
async function runnerPid(container: Dockerode.Container): Promise<number> {
  const runner = (await containerProcesses(container)).find(
    (p) => p.uid === 0 && envValue(p, "OUBLIETTE_RUNNER_TOKEN") !== undefined,
  );
  if (!runner) throw new Error("no runner process in the container");
  return runner.pid;
}

/** The droid of `sessionId` says `text` back; resolves once it did (rejects after `timeoutMs`). */
async function echo(sessionId: string, text: string, timeoutMs = 30_000): Promise<void> {
  const outputs = await e2e.caller.runScript(
    sessionId,
    { id: `echo-${crypto.randomUUID().slice(0, 8)}`, steps: [{ op: "echo", text }] },
    timeoutMs,
  );
  if (!outputs.some((d) => d.op === "echo" && d.text === text)) throw new Error(`no echo of ${text}`);
}

describe("a project's memory limit", () => {
  const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });
  const ended = (sessionId: string, timeoutMs: number) =>
    e2e.caller.waitFor(
      (e) => e.session_id === sessionId && e.type === "session_ended",
      timeoutMs,
      "the session's end",
    ) as Promise<{ reason: string }>;

  it("under sustained pressure ends an agent holding the most, before the runner or the other sessions stall", async () => {
    const projectId = await project({ memory_mb: 512 });
    try {
      const [first, second, bystander] = [
        await spawn(projectId),
        await spawn(projectId),
        await spawn(projectId),
      ];
      const container = await projectContainer(docker(), projectId);
      const runner = await runnerPid(container);
      const hostLog = e2e.stack.hosts[0]?.logFile ?? "";
      const pingLosses = () => readFileSync(hostLog, "utf8").split("the runner stopped answering").length - 1;
      const lossesBefore = pingLosses();
      // Two agents each take about 60 % of the limit, slowly, and would keep it in use for a minute.
      const hold = (id: string) => ({
        id,
        steps: [{ op: "hold_memory", mb: 300, ms: 60_000, step_mb: 4, step_ms: 100 }],
      });
      await e2e.caller.ok("session", {
        action: "message",
        session_id: first,
        message: JSON.stringify(hold("a")),
      });
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await e2e.caller.ok("session", {
        action: "message",
        session_id: second,
        message: JSON.stringify(hold("b")),
      });

      // The bystander answers within seconds the whole time.
      let slowest = 0;
      const until = Date.now() + 65_000;
      for (let n = 0; Date.now() < until; n += 1) {
        const started = Date.now();
        await echo(bystander, `still here ${n}`, 10_000);
        slowest = Math.max(slowest, Date.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      expect(slowest, "the bystander's slowest answer (ms)").toBeLessThan(5_000);

      // Both cannot fit: at least one agent was ended, and its session says why, with the limit.
      const endings = [first, second].flatMap((id) =>
        e2e.caller.events.filter((e) => e.session_id === id && e.type === "session_ended"),
      );
      expect(endings.length).toBeGreaterThanOrEqual(1);
      for (const ending of endings) {
        const reason = ending.type === "session_ended" ? ending.reason : "";
        expect(reason).toContain("out of memory");
        expect(reason).toContain("of its 512 MiB limit");
        expect(reason).toContain("it is not started again");
      }
      // The runner is the same process, the host never lost its pings, and the project takes a new session.
      expect(await runnerPid(container)).toBe(runner);
      expect(pingLosses()).toBe(lossesBefore);
      await echo(await spawn(projectId), "a fresh session answers");
    } finally {
      await e2e.caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 240_000);

  it("ends a command that takes too much, tells its session, and the session goes on", async () => {
    const projectId = await project({ memory_mb: 512 });
    try {
      const session = await spawn(projectId);
      const greedy = {
        id: "greedy-command",
        steps: [{ op: "exec", argv: ["node", "-e", HOLD, "600", "30000"], timeout_ms: 60_000 }],
      };
      const outputs = await e2e.caller.runScript(session, greedy, 90_000);
      expect(outputs.find((d) => d.op === "exec")).toMatchObject({ signal: "SIGKILL" });
      const told = e2e.caller.events.find((e) => e.session_id === session && e.type === "error");
      expect(told?.type === "error" ? told.message : "").toMatch(
        /^a process the agent started was ended: out of memory: node \(pid \d+\) held \d+ MiB when the container was at \d+ MiB of its 512 MiB limit/,
      );
      await echo(session, "still running");
    } finally {
      await e2e.caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 180_000);

  it("ends the session of an agent the kernel killed for taking 2 GiB at once, saying why", async () => {
    const projectId = await project({ memory_mb: 512 });
    try {
      const hog = await spawn(projectId);
      const bystander = await spawn(projectId);
      const hold = { id: "greedy", steps: [{ op: "hold_memory", mb: 2048, ms: 30_000, step_mb: 2048 }] };
      await e2e.caller.ok("session", { action: "message", session_id: hog, message: JSON.stringify(hold) });
      const { reason } = await ended(hog, 60_000);
      expect(reason).toContain("out of memory");
      expect(reason).toContain("512 MiB");
      await echo(bystander, "unharmed");
    } finally {
      await e2e.caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 180_000);
});
