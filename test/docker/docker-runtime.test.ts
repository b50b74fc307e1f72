/**
 * DockerRuntime against a real Docker Engine (no mocks): containers from the node base image run
 * `node -e <script>` so each test states exactly what the "droid" does.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DockerRuntime, SESSION_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import { dockerStatusCode, RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { selectRuntime } from "../../host-agent/src/runtime/select-runtime.js";
import type { AgentProcess } from "../../host-agent/src/runtime/types.js";
import { createLogger } from "../../lib/log.js";
import { type DockerEngine, ensureDockerEngine } from "../../scripts/docker/engine.js";
import { ensureNodeBaseImage } from "../../scripts/docker/images.js";
import { readAllText, readLineMatching } from "../support/stream-text.js";

const logger = createLogger({
  name: "docker-runtime-test",
  level: process.env.OUBLIETTE_LOG_LEVEL ?? "silent",
});
const log = (line: string) => process.stderr.write(`[docker-test] ${line}\n`);
const hostId = `test-${process.pid}`;

let engine: DockerEngine;
let baseImage: string;
let socketDir: string;
let sessionCounter = 0;
const launched: AgentProcess[] = [];

beforeAll(async () => {
  // Until vitest.config.ts wires test/support/docker-setup.ts, get the engine here (a no-op
  // when the globalSetup already made it reachable).
  engine = await ensureDockerEngine({ install: true, log });
  baseImage = await ensureNodeBaseImage(engine.docker, log);
  socketDir = mkdtempSync(join(tmpdir(), "oub-docker-test-"));
  // The container user (uid 1000) must be able to traverse the mounted directory.
  chmodSync(socketDir, 0o755);
}, 600_000);

afterAll(async () => {
  await Promise.all(launched.map((agent) => agent.stop("test cleanup")));
  if (engine) {
    await runtime(["true"]).removeOrphans();
    await engine.stop();
  }
  if (socketDir) rmSync(socketDir, { recursive: true, force: true });
}, 60_000);

function runtime(command: string[], options: { image?: string } = {}): DockerRuntime {
  return new DockerRuntime({
    docker: engine.docker,
    hostId,
    defaultImage: options.image ?? baseImage,
    logger,
    command,
    stopTimeoutSeconds: 2,
  });
}

async function launchScript(script: string, env: Record<string, string> = {}): Promise<AgentProcess> {
  sessionCounter += 1;
  const agent = await runtime(["node", "-e", script]).launch({
    sessionId: `docker-test-${process.pid}-${sessionCounter}`,
    socketDir,
    env,
  });
  launched.push(agent);
  return agent;
}

async function inspectStatus(docker: Dockerode, id: string): Promise<number | "exists"> {
  try {
    await docker.getContainer(id).inspect();
    return "exists";
  } catch (error) {
    return dockerStatusCode(error) ?? -1;
  }
}

describe("DockerRuntime", () => {
  it("echoes a stdin line back on stdout, and the droid sees stdin end", async () => {
    const agent = await launchScript(`
      const rl = require("node:readline").createInterface({ input: process.stdin });
      rl.on("line", (line) => console.log("echo:" + line));
      rl.on("close", () => console.log("stdin closed"));
    `);
    agent.stdin.write("hello droid\n");
    expect(await readLineMatching(agent.stdout, (line) => line.startsWith("echo:"))).toBe("echo:hello droid");
    agent.stdin.end();
    // StdinOnce: our EOF reaches the droid and its output after EOF still arrives.
    expect(await readAllText(agent.stdout)).toBe("stdin closed\n");
    expect(await agent.exited).toEqual({ exitCode: 0, signal: null });
  });

  it("keeps stderr separate from stdout", async () => {
    const agent = await launchScript(`
      process.stdout.write("to stdout\\n");
      process.stderr.write("to stderr\\n");
    `);
    const [stdout, stderr] = await Promise.all([readAllText(agent.stdout), readAllText(agent.stderr)]);
    expect(stdout).toBe("to stdout\n");
    expect(stderr).toBe("to stderr\n");
    expect((await agent.exited).exitCode).toBe(0);
  });

  it("runs without network, as uid 1000, with the socket path and env it was given", async () => {
    const agent = await launchScript(
      `console.log(JSON.stringify({
        interfaces: Object.keys(require("node:os").networkInterfaces()),
        uid: process.getuid(),
        gid: process.getgid(),
        socket: process.env.OUBLIETTE_SOCKET,
        custom: process.env.CUSTOM_VALUE,
      }));`,
      { CUSTOM_VALUE: "a value; with $(no) shell `expansion`" },
    );
    const report = JSON.parse(await readAllText(agent.stdout));
    expect(report).toEqual({
      interfaces: ["lo"],
      uid: 1000,
      gid: 1000,
      socket: "/mcp/relay.sock",
      custom: "a value; with $(no) shell `expansion`",
    });
  });

  it("lets the container connect to a Unix socket the host serves in socketDir", async () => {
    const server = await serveRelaySocket(join(socketDir, "relay.sock"));
    try {
      const agent = await launchScript(`
        const socket = require("node:net").connect(process.env.OUBLIETTE_SOCKET);
        socket.on("error", (error) => { console.error(error.message); process.exit(2); });
        socket.on("connect", () => socket.write("ping\\n"));
        socket.on("data", (data) => { process.stdout.write(String(data)); socket.end(); });
      `);
      const [stdout, stderr] = await Promise.all([readAllText(agent.stdout), readAllText(agent.stderr)]);
      expect(stderr).toBe("");
      expect(stdout).toBe("pong:ping\n");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("stop() stops and removes the container, and is idempotent", async () => {
    const agent = await launchScript(`console.log("up"); setInterval(() => {}, 1000);`);
    await readLineMatching(agent.stdout, (line) => line === "up");
    expect(await inspectStatus(engine.docker, agent.id)).toBe("exists");
    await Promise.all([agent.stop("test"), agent.stop("test again")]);
    expect(await inspectStatus(engine.docker, agent.id)).toBe(404);
    // tini forwards the engine's SIGTERM; node dies of it: 128 + 15.
    expect(await agent.exited).toEqual({ exitCode: 143, signal: null });
    await agent.stop("after removal");
  });

  it("fails a launch of a missing image with image_not_found and leaves no container", async () => {
    const sessionId = `docker-test-${process.pid}-missing`;
    const missing = runtime(["true"], { image: "oubliette/does-not-exist:never" });
    const failure = await missing.launch({ sessionId, socketDir, env: {} }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RuntimeError);
    expect(failure).toMatchObject({ code: "image_not_found" });
    const left = await engine.docker.listContainers({
      all: true,
      filters: { label: [`${SESSION_LABEL}=${sessionId}`] },
    });
    expect(left).toEqual([]);
  });

  // Provided by test/support/docker-setup.ts (the globalSetup); absent when it is not wired.
  const droidImage = inject("droidImage");
  it.skipIf(droidImage === undefined)(
    "droid image holds the bundles and runs as droid in its home",
    async () => {
      sessionCounter += 1;
      const agent = await runtime(
        [
          "node",
          "-e",
          `console.log(JSON.stringify({ files: require("node:fs").readdirSync("/opt/oubliette").sort(),
          cwd: process.cwd(), user: require("node:os").userInfo().username }))`,
        ],
        { image: droidImage },
      ).launch({ sessionId: `docker-test-${process.pid}-${sessionCounter}`, socketDir, env: {} });
      launched.push(agent);
      const report = JSON.parse(await readAllText(agent.stdout));
      expect(report.files).toEqual(expect.arrayContaining(["container-client.mjs", "scripted-droid.mjs"]));
      expect(report).toMatchObject({ cwd: "/home/droid", user: "droid" });
    },
  );

  it("is what selectRuntime picks on auto when the engine answers", async () => {
    const selected = await selectRuntime({
      prefer: "auto",
      hostId,
      logger,
      dockerImage: baseImage,
      processCommand: ["true"],
      dockerSocket: engine.socketPath,
    });
    expect(selected).toBeInstanceOf(DockerRuntime);
  });

  it("removeOrphans() removes this host's containers left behind", async () => {
    const agent = await launchScript(`setInterval(() => {}, 1000);`);
    const removed = await runtime(["true"]).removeOrphans();
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await inspectStatus(engine.docker, agent.id)).toBe(404);
    expect((await agent.exited).exitCode).not.toBe(0);
  });
});

/** A host-side relay.sock answering each line with `pong:<line>`, reachable by uid 1000. */
async function serveRelaySocket(path: string): Promise<Server> {
  const server = createServer((socket) => {
    socket.setEncoding("utf8");
    socket.on("data", (data: string) => socket.write(`pong:${data}`));
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chmodSync(path, 0o666);
  return server;
}
