/**
 * ProcessRuntime with real child processes: a `node -e` script stands in for a project's runner
 * and reports what it was given through a file; stopping escalates from SIGTERM to SIGKILL;
 * exec runs an argv in the project's workspaces and logs keep the runner's output.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { ProcessRuntime } from "../../host-agent/src/runtime/process-runtime.js";
import type { Workload } from "../../host-agent/src/runtime/types.js";
import { createLogger } from "../../lib/log.js";

const logger = createLogger({ name: "process-runtime-test", level: "silent" });
const socketDir = mkdtempSync(join(tmpdir(), "oub-process-test-"));
const workspacesDir = join(socketDir, "workspaces");
mkdirSync(join(workspacesDir, "default"), { recursive: true });
const agentCommand = ["node", "/opt/agent.mjs"];

afterAll(() => rmSync(socketDir, { recursive: true, force: true }));

function runtime(script: string, killAfterMs?: number) {
  return new ProcessRuntime({
    runnerCommand: [process.execPath, "-e", script],
    agentCommand,
    logger,
    ...(killAfterMs === undefined ? {} : { killAfterMs }),
  });
}

function launch(rt: ProcessRuntime, env: Record<string, string> = {}): Promise<Workload> {
  return rt.launch({
    projectId: "prj_000000000000000000000001",
    runnerToken: "secret",
    socketDir,
    workspacesDir,
    homesDir: join(socketDir, "homes"),
    env,
    limits: { memoryMb: 256, cpus: 1, pids: 64 },
    isolation: false,
    ephemeral: false,
    tmpMb: 16,
  });
}

async function report(name: string): Promise<Record<string, string>> {
  const path = join(socketDir, `${name}.json`);
  for (let i = 0; i < 200 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 25));
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, string>;
}

/** Writes a report whole: to a file of its own, renamed into place (the test polls for the name). */
const writeReport = (name: string, expression: string) => {
  const path = join(socketDir, `${name}.json`);
  return `require("node:fs").writeFileSync(${JSON.stringify(`${path}.part`)}, JSON.stringify(${expression})); require("node:fs").renameSync(${JSON.stringify(`${path}.part`)}, ${JSON.stringify(path)});`;
};

describe("ProcessRuntime", () => {
  it("gives the runner the project's socket, secret, agent command and env, and none of our secrets", async () => {
    process.env.OUBLIETTE_TEST_PARENT_SECRET = "must not leak";
    try {
      const workload = await launch(runtime(writeReport("env", "process.env")), { CUSTOM: "x y $z" });
      expect(workload.id).toMatch(/^pid:\d+$/);
      const env = await report("env");
      expect(env).toMatchObject({
        CUSTOM: "x y $z",
        OUBLIETTE_SOCKET: `${socketDir}/runner/relay.sock`,
        OUBLIETTE_RUNNER_TOKEN: "secret",
        OUBLIETTE_PROJECT_ID: "prj_000000000000000000000001",
        OUBLIETTE_RUNNER_EXIT_WITH_PARENT: "1",
        PATH: process.env.PATH,
      });
      expect(JSON.parse(env.OUBLIETTE_AGENT_COMMAND ?? "")).toEqual(agentCommand);
      expect(env.OUBLIETTE_TEST_PARENT_SECRET).toBeUndefined();
      expect(await workload.exited).toEqual({ exitCode: 0, signal: null });
    } finally {
      delete process.env.OUBLIETTE_TEST_PARENT_SECRET;
    }
  });

  it("stop() sends SIGTERM", async () => {
    const workload = await launch(runtime(`${writeReport("term", "true")} setInterval(() => {}, 1000);`));
    await report("term");
    await workload.stop("test");
    expect(await workload.exited).toEqual({ exitCode: null, signal: "SIGTERM" });
  });

  it("stop() escalates to SIGKILL for a runner that ignores SIGTERM, and is idempotent", async () => {
    const workload = await launch(
      runtime(
        `process.on("SIGTERM", () => {}); ${writeReport("kill", "true")} setInterval(() => {}, 1000);`,
        300,
      ),
    );
    await report("kill");
    const startedAt = Date.now();
    const first = workload.stop("test");
    expect(workload.stop("again")).toBe(first);
    await first;
    expect(await workload.exited).toEqual({ exitCode: null, signal: "SIGKILL" });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(250);
    await workload.stop("after exit");
  });

  it("fails a launch of a missing program with a typed runtime_error", async () => {
    const rt = new ProcessRuntime({ runnerCommand: ["/nonexistent/runner"], agentCommand, logger });
    const failure = await launch(rt).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RuntimeError);
    expect(failure).toMatchObject({ code: "runtime_error" });
  });

  it("does not survive the host-agent, so it has nothing to re-adopt, and cannot isolate", async () => {
    const rt = runtime("");
    expect(rt.survivesRestart).toBe(false);
    expect(rt.canIsolate).toBe(false);
    expect(await rt.adopt()).toEqual([]);
  });

  it("execs an argv in the workspaces (no shell), with a cap and a timeout, and keeps the runner's output for logs", async () => {
    const workload = await launch(
      runtime(
        `console.log("runner line one"); console.error("runner line two"); setInterval(() => {}, 1000);`,
      ),
    );
    try {
      const result = await workload.exec({
        project_id: "prj_000000000000000000000001",
        command: [
          process.execPath,
          "-e",
          "process.stdout.write(process.cwd() + ' ' + process.argv[1]); process.exit(3)",
          "$(id)",
        ],
        cwd: "/workspace/default",
        timeout_ms: 10_000,
        output_limit_bytes: 65_536,
      });
      expect(result).toMatchObject({
        exit_code: 3,
        stdout: `${join(workspacesDir, "default")} $(id)`,
        timed_out: false,
      });
      const slow = await workload.exec({
        project_id: "prj_000000000000000000000001",
        command: [
          process.execPath,
          "-e",
          "process.stdout.write('y'.repeat(5000)); setInterval(() => {}, 1000)",
        ],
        timeout_ms: 500,
        output_limit_bytes: 100,
      });
      expect(slow).toMatchObject({
        exit_code: null,
        timed_out: true,
        truncated: true,
        stdout: "y".repeat(100),
      });
      await expect(
        workload.exec({
          project_id: "prj_000000000000000000000001",
          command: ["true"],
          cwd: "/etc",
          timeout_ms: 1000,
          output_limit_bytes: 10,
        }),
      ).rejects.toMatchObject({ reason: "invalid" });
      for (let i = 0; i < 100; i++) {
        if ((await workload.logs({ project_id: "prj_000000000000000000000001", tail: 10 })).lines.length >= 2)
          break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const logs = await workload.logs({ project_id: "prj_000000000000000000000001", tail: 10 });
      expect(logs.lines.map((l) => l.replace(/^\S+ /, ""))).toEqual(["runner line one", "runner line two"]);
      expect(
        (await workload.logs({ project_id: "prj_000000000000000000000001", tail: 1 })).lines,
      ).toHaveLength(1);
      const later = Math.floor(Date.now() / 1000) + 60;
      expect(
        (await workload.logs({ project_id: "prj_000000000000000000000001", tail: 10, since: later })).lines,
      ).toEqual([]);
    } finally {
      await workload.stop("test");
    }
  });
});
