/**
 * A port someone else serves is never taken for this stack's Worker: readiness waits for the
 * Worker's own instance nonce on /healthz, an explicit port in use is refused up front, and
 * `npm start` on a busy default port moves to a free one (saying so).
 */
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { buildAll } from "../../scripts/build.js";
import { LocalStack } from "../../scripts/stack/local-stack.js";
import { PortInUseError } from "../../scripts/stack/port.js";
import { NotOurWorkerError, waitForInstance } from "../../scripts/stack/readiness.js";
import { DEFAULT_PORT } from "../../scripts/stack/start-settings.js";
import { runStart, START_TEST_MS, type StartRun } from "./start-run.js";

vi.setConfig({ testTimeout: START_TEST_MS });

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(async () => {
  await buildAll();
});

/** A plain TCP server holding 127.0.0.1:`port` (0: any) until the test ends. */
async function occupy(port = 0): Promise<number> {
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return typeof address === "object" && address ? address.port : port;
}

/** An HTTP server whose /healthz answers `body`. */
async function fakeHealth(body: unknown): Promise<string> {
  const server: HttpServer = createHttpServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

async function started(env: Record<string, string>): Promise<StartRun> {
  const run = await runStart(env);
  cleanups.push(() => run.dispose());
  return run;
}

describe("readiness", () => {
  it("is not fooled by another server answering ok, with or without another instance", async () => {
    for (const body of [{ ok: true }, { ok: true, instance: "someone-else" }]) {
      const url = await fakeHealth(body);
      const wait = waitForInstance(url, "mine", { timeoutMs: 1_000, pollMs: 20 });
      await expect(wait).rejects.toThrow(NotOurWorkerError);
      await expect(wait).rejects.toThrow(/another Worker/);
    }
  });

  it("is its own instance answering", async () => {
    const url = await fakeHealth({ ok: true, instance: "mine" });
    await expect(waitForInstance(url, "mine", { timeoutMs: 1_000, pollMs: 20 })).resolves.toBeUndefined();
  });

  it("of a real stack: its Worker answers /healthz with the nonce it was given", async () => {
    const stack = await LocalStack.start();
    cleanups.push(() => stack.stop());
    const health = await (await fetch(new URL("/healthz", stack.url))).json();
    expect(health).toEqual({ ok: true, instance: stack.worker.instanceId });
    expect(stack.worker.instanceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("a busy port", () => {
  it("asked of LocalStack is refused before wrangler starts", async () => {
    const port = await occupy();
    const before = Date.now();
    await expect(LocalStack.start({ port })).rejects.toThrow(PortInUseError);
    expect(Date.now() - before).toBeLessThan(2_000);
  });

  it("given as PORT to npm start: one line naming it, exit code 1", async () => {
    const port = await occupy();
    const run = await started({ PORT: String(port) });
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.output()).toBe(`oubliette: port ${port} is already in use; set PORT to a free port\n`);
    expect(run.seen().filter((p) => /wrangler|workerd/.test(p.cmdline))).toEqual([]);
  });

  it(`as the default (${DEFAULT_PORT}): npm start moves to a free port and says so in one line`, async () => {
    // Held here unless something else already holds it; busy either way.
    await occupy(DEFAULT_PORT).catch(() => undefined);
    const run = await started({});
    const urlLine = await run.waitForLine(/MCP URL:/);
    const moved = run
      .output()
      .split("\n")
      .filter((l) => l.includes(`port ${DEFAULT_PORT}`));
    expect(moved).toHaveLength(1);
    const port = Number(/using port (\d+) instead/.exec(moved[0] ?? "")?.[1]);
    expect(port).not.toBe(DEFAULT_PORT);
    expect(urlLine).toContain(`http://127.0.0.1:${port}/mcp`);
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    expect(health).toMatchObject({ ok: true, instance: expect.stringMatching(/^[0-9a-f]{32}$/) });
    run.child.kill("SIGINT");
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.leftovers()).toEqual([]);
  });
});
