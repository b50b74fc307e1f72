/**
 * ProcessRuntime with real child processes: a `node -e` script stands in for the runner and
 * reports what it was given through a file; stopping escalates from SIGTERM to SIGKILL.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { ProcessRuntime } from "../../host-agent/src/runtime/process-runtime.js";
import type { Workload } from "../../host-agent/src/runtime/types.js";
import { createLogger } from "../../lib/log.js";

const logger = createLogger({ name: "process-runtime-test", level: "silent" });
const socketDir = mkdtempSync(join(tmpdir(), "oub-process-test-"));
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
  return rt.launch({ sessionId: "process-test", sessionToken: "secret", socketDir, env });
}

async function report(name: string): Promise<Record<string, string>> {
  const path = join(socketDir, `${name}.json`);
  for (let i = 0; i < 200 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 25));
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, string>;
}

const writeReport = (name: string, expression: string) =>
  `require("node:fs").writeFileSync(${JSON.stringify(join(socketDir, `${name}.json`))}, JSON.stringify(${expression}));`;

describe("ProcessRuntime", () => {
  it("gives the runner the session's socket, secret, agent command and env, and none of our secrets", async () => {
    process.env.OUBLIETTE_TEST_PARENT_SECRET = "must not leak";
    try {
      const workload = await launch(runtime(writeReport("env", "process.env")), { CUSTOM: "x y $z" });
      expect(workload.id).toMatch(/^pid:\d+$/);
      const env = await report("env");
      expect(env).toMatchObject({
        CUSTOM: "x y $z",
        OUBLIETTE_SOCKET: `${socketDir}/relay.sock`,
        OUBLIETTE_SESSION_TOKEN: "secret",
        OUBLIETTE_SESSION_ID: "process-test",
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

  it("does not survive the host-agent, so it has nothing to re-adopt", async () => {
    const rt = runtime("");
    expect(rt.survivesRestart).toBe(false);
    expect(await rt.adopt()).toEqual([]);
  });
});
