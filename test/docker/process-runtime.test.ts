/** ProcessRuntime with real child processes (node -e scripts): stdio, environment, stop escalation. */
import { describe, expect, it } from "vitest";
import { RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { ProcessRuntime } from "../../host-agent/src/runtime/process-runtime.js";
import type { AgentProcess } from "../../host-agent/src/runtime/types.js";
import { createLogger } from "../../lib/log.js";
import { readAllText, readLineMatching } from "../support/stream-text.js";

const logger = createLogger({ name: "process-runtime-test", level: "silent" });
const socketDir = "/tmp/oub-process-test";

function runtime(script: string, timing: { termAfterMs?: number; killAfterMs?: number } = {}) {
  return new ProcessRuntime({ command: [process.execPath, "-e", script], logger, ...timing });
}

async function launch(rt: ProcessRuntime, env: Record<string, string> = {}): Promise<AgentProcess> {
  return rt.launch({ sessionId: "process-test", socketDir, env });
}

describe("ProcessRuntime", () => {
  it("echoes a stdin line on stdout and exits when stdin ends", async () => {
    const agent = await launch(
      runtime(`
        const rl = require("node:readline").createInterface({ input: process.stdin });
        rl.on("line", (line) => console.log("echo:" + line));
      `),
    );
    expect(agent.id).toMatch(/^pid:\d+$/);
    agent.stdin.write("hello\n");
    expect(await readLineMatching(agent.stdout, (line) => line.startsWith("echo:"))).toBe("echo:hello");
    agent.stdin.end();
    expect(await agent.exited).toEqual({ exitCode: 0, signal: null });
  });

  it("passes spec.env, OUBLIETTE_SOCKET, PATH and HOME, and nothing else from the parent", async () => {
    process.env.OUBLIETTE_TEST_PARENT_SECRET = "must not leak";
    try {
      const agent = await launch(runtime(`console.log(JSON.stringify(process.env))`), { CUSTOM: "x y $z" });
      const env = JSON.parse(await readAllText(agent.stdout));
      expect(env.CUSTOM).toBe("x y $z");
      expect(env.OUBLIETTE_SOCKET).toBe(`${socketDir}/relay.sock`);
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.OUBLIETTE_TEST_PARENT_SECRET).toBeUndefined();
    } finally {
      delete process.env.OUBLIETTE_TEST_PARENT_SECRET;
    }
  });

  it("stop() sends SIGTERM to a process that ignores stdin end", async () => {
    const agent = await launch(
      runtime(`console.log("ready"); setInterval(() => {}, 1000);`, { termAfterMs: 100 }),
    );
    await readLineMatching(agent.stdout, (line) => line === "ready");
    await agent.stop("test");
    expect(await agent.exited).toEqual({ exitCode: null, signal: "SIGTERM" });
  });

  it("stop() escalates to SIGKILL for a process that ignores SIGTERM, and is idempotent", async () => {
    const agent = await launch(
      runtime(
        `process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("ready"); setInterval(() => {}, 1000);`,
        {
          termAfterMs: 100,
          killAfterMs: 300,
        },
      ),
    );
    await readLineMatching(agent.stdout, (line) => line === "ready");
    const startedAt = Date.now();
    const first = agent.stop("test");
    expect(agent.stop("again")).toBe(first);
    await first;
    expect(await agent.exited).toEqual({ exitCode: null, signal: "SIGKILL" });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(350);
    await agent.stop("after exit");
  });

  it("fails a launch of a missing program with a typed runtime_error", async () => {
    const rt = new ProcessRuntime({ command: ["/nonexistent/droid-binary"], logger });
    const failure = await launch(rt).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RuntimeError);
    expect(failure).toMatchObject({ code: "runtime_error" });
  });

  it("has no orphans to remove", async () => {
    expect(await runtime("").removeOrphans()).toBe(0);
  });
});
