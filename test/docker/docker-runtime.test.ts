/**
 * DockerRuntime against a real Docker Engine (no mocks): project containers from the node base image run
 * `node -e <script>`, reporting through the bind-mounted socket directory, so each test states
 * exactly what the workload does. No stdio is attached: containers outlive their host-agent.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureNodeBaseImage } from "../../host-agent/src/images/images.js";
import { DockerRuntime, HOST_LABEL, PROJECT_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import { dockerStatusCode, RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { selectRuntime } from "../../host-agent/src/runtime/select-runtime.js";
import type { ProjectLaunch, Workload } from "../../host-agent/src/runtime/types.js";
import { createLogger } from "../../lib/log.js";
import { type DockerEngine, ensureDockerEngine } from "../../scripts/docker/engine.js";
import { dockerContext } from "../support/docker-context.js";

const logger = createLogger({
  name: "docker-runtime-test",
  level: process.env.OUBLIETTE_LOG_LEVEL ?? "silent",
});
const log = (line: string) => process.stderr.write(`[docker-test] ${line}\n`);
const hostId = `test-${process.pid}`;

let engine: DockerEngine;
let baseImage: string;
let socketDir: string;
let workspacesDir: string;
let homesDir: string;
let sessionCounter = 0;
const launched: Workload[] = [];

beforeAll(async () => {
  // Until vitest.config.ts wires test/support/docker-setup.ts, get the engine here (a no-op
  // when the globalSetup already made it reachable).
  engine = await ensureDockerEngine({ install: true, log });
  baseImage = await ensureNodeBaseImage(engine.docker, log);
  socketDir = mkdtempSync(join(tmpdir(), "oub-docker-test-"));
  // The container user (uid 1000) writes its reports into the mounted directory.
  chmodSync(socketDir, 0o777);
  workspacesDir = join(socketDir, "workspaces");
  mkdirSync(workspacesDir, { mode: 0o777 });
  chmodSync(workspacesDir, 0o777);
  homesDir = join(socketDir, "homes");
  mkdirSync(homesDir, { mode: 0o777 });
  mkdirSync(join(socketDir, "runner"), { mode: 0o777 });
}, 600_000);

afterAll(async () => {
  await Promise.all(launched.map((workload) => workload.stop("test cleanup")));
  if (engine) {
    for (const adopted of await runtime(["true"]).adopt()) await adopted.workload.stop("test cleanup");
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

/** A project id in the product's format, unique to this run. */
function projectIdOf(n: number): string {
  return `prj_${process.pid.toString(16).padStart(8, "0")}${n.toString(16).padStart(16, "0")}`;
}

/** A launch of project `n` with this file's directories and small limits. */
function launchOf(n: number, token: string, env: Record<string, string> = {}): ProjectLaunch {
  return {
    projectId: projectIdOf(n),
    runnerToken: token,
    socketDir,
    workspacesDir,
    homesDir,
    env,
    limits: { memoryMb: 256, cpus: 1, pids: 128 },
    isolation: false,
    ephemeral: false,
    tmpMb: 16,
  };
}

async function launchScript(script: string, env: Record<string, string> = {}): Promise<Workload> {
  sessionCounter += 1;
  const workload = await runtime(["node", "-e", script]).launch(
    launchOf(sessionCounter, `token-${sessionCounter}`, env),
  );
  launched.push(workload);
  return workload;
}

async function inspectStatus(docker: Dockerode, id: string): Promise<number | "exists"> {
  try {
    await docker.getContainer(id).inspect();
    return "exists";
  } catch (error) {
    return dockerStatusCode(error) ?? -1;
  }
}

/** A report the container wrote to /mcp/<name>.json, waited for. */
async function report(name: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const path = join(socketDir, `${name}.json`);
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`no report ${name} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** Writes a report whole: to a file of its own, renamed into place (the test polls for the name). */
const writeReport = (name: string, expression: string) =>
  `require("node:fs").writeFileSync("/mcp/${name}.json.part", JSON.stringify(${expression})); require("node:fs").renameSync("/mcp/${name}.json.part", "/mcp/${name}.json");`;

describe("DockerRuntime", () => {
  it("runs the runner without network, as root with only SETUID, SETGID and KILL, on a read-only root, in /workspace, with the socket path, secret and env it was given", async () => {
    const workload = await launchScript(
      writeReport(
        "env",
        `{
        interfaces: Object.keys(require("node:os").networkInterfaces()),
        uid: process.getuid(),
        gid: process.getgid(),
        capEff: /CapEff:\\s*(\\w+)/.exec(require("node:fs").readFileSync("/proc/self/status", "utf8"))[1],
        rootWritable: (() => { try { require("node:fs").writeFileSync("/etc/x", "x"); return true; } catch (e) { return e.code; } })(),
        tmpWritable: (() => { require("node:fs").writeFileSync("/tmp/x", "x"); return true; })(),
        socket: process.env.OUBLIETTE_SOCKET,
        token: process.env.OUBLIETTE_RUNNER_TOKEN,
        project: process.env.OUBLIETTE_PROJECT_ID,
        cwd: process.cwd(),
        custom: process.env.CUSTOM_VALUE,
      }`,
      ),
      { CUSTOM_VALUE: "a value; with $(no) shell `expansion`" },
    );
    expect(await report("env")).toEqual({
      interfaces: ["lo"],
      uid: 0,
      gid: 0,
      // CAP_KILL (5), CAP_SETGID (6), CAP_SETUID (7): 0xe0.
      capEff: "00000000000000e0",
      rootWritable: "EROFS",
      tmpWritable: true,
      socket: "/mcp/runner/relay.sock",
      token: `token-${sessionCounter}`,
      project: projectIdOf(sessionCounter),
      cwd: "/workspace",
      custom: "a value; with $(no) shell `expansion`",
    });
    expect(await workload.exited).toEqual({ exitCode: 0, signal: null });
  });

  it("lets the container connect to a Unix socket the host serves in socketDir", async () => {
    const server = await serveRelaySocket(join(socketDir, "runner", "relay.sock"));
    try {
      const workload = await launchScript(`
        const socket = require("node:net").connect(process.env.OUBLIETTE_SOCKET);
        socket.on("error", (error) => { console.error(error.message); process.exit(2); });
        socket.on("connect", () => socket.write("ping\\n"));
        socket.on("data", (data) => { ${writeReport("socket", "{ got: String(data) }")} socket.end(); });
      `);
      expect(await report("socket")).toEqual({ got: "pong:ping\n" });
      expect((await workload.exited).exitCode).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("stop() stops and removes the container, and is idempotent", async () => {
    const workload = await launchScript(`${writeReport("up", "true")} setInterval(() => {}, 1000);`);
    await report("up");
    expect(await inspectStatus(engine.docker, workload.id)).toBe("exists");
    await Promise.all([workload.stop("test"), workload.stop("test again")]);
    expect(await inspectStatus(engine.docker, workload.id)).toBe(404);
    // tini forwards the engine's SIGTERM; node dies of it: 128 + 15.
    expect(await workload.exited).toEqual({ exitCode: 143, signal: null });
    await workload.stop("after removal");
  });

  it("fails a launch of a missing image with image_not_found and leaves no container", async () => {
    const projectId = projectIdOf(999_999);
    const missing = runtime(["true"], { image: "oubliette/does-not-exist:never" });
    const failure = await missing.launch(launchOf(999_999, "t")).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RuntimeError);
    expect(failure).toMatchObject({ code: "image_not_found" });
    const left = await engine.docker.listContainers({
      all: true,
      filters: { label: [`${PROJECT_LABEL}=${projectId}`] },
    });
    expect(left).toEqual([]);
  });

  // Provided by test/support/docker-setup.ts (the globalSetup); absent when it is not wired.
  const droidImage = dockerContext().droidImage;
  it.skipIf(droidImage === undefined)(
    "droid image holds the bundles, runs the runner, as root in the project's volume",
    async () => {
      sessionCounter += 1;
      const workload = await runtime(
        [
          "node",
          "-e",
          writeReport(
            "image",
            `{ files: require("node:fs").readdirSync("/opt/oubliette").sort(),
          cwd: process.cwd(), user: require("node:os").userInfo().username,
          agent: process.env.OUBLIETTE_AGENT_COMMAND }`,
          ),
        ],
        { image: droidImage },
      ).launch(launchOf(sessionCounter, "t"));
      launched.push(workload);
      const image = await report("image");
      expect(image.files).toEqual(expect.arrayContaining(["container-client.mjs", "scripted-droid.mjs"]));
      // The project's volume is where everything runs, whatever the image's WORKDIR.
      expect(image).toMatchObject({ cwd: "/workspace", user: "root" });
      expect(JSON.parse(String(image.agent))).toEqual(["node", "/opt/oubliette/scripted-droid.mjs"]);
      const config = await engine.docker.getImage(droidImage ?? "").inspect();
      expect(config.Config.Cmd).toEqual(["node", "/opt/oubliette/container-client.mjs", "runner"]);
    },
  );

  it("is what selectRuntime picks on auto when the engine answers", async () => {
    const selected = await selectRuntime({
      prefer: "auto",
      hostId,
      logger,
      dockerImage: baseImage,
      runnerCommand: ["true"],
      dockerSocket: engine.socketPath,
    });
    expect(selected).toBeInstanceOf(DockerRuntime);
  });

  it("adopt() hands a restarted host-agent its running containers and removes the stopped ones", async () => {
    const running = await launchScript(`setInterval(() => {}, 1000);`);
    const stopped = await launchScript(`process.exit(0);`);
    await stopped.exited;
    // Another host's container on the same engine is none of our business.
    const other = await new DockerRuntime({
      docker: engine.docker,
      hostId: `${hostId}-other`,
      defaultImage: baseImage,
      logger,
      command: ["node", "-e", "setInterval(() => {}, 1000)"],
      stopTimeoutSeconds: 1,
    }).launch(launchOf(888_888, "o"));
    launched.push(other);

    // A new runtime object is what a restarted host-agent has: nothing but the engine and its host id.
    const adopted = await runtime(["true"]).adopt();
    const mine = adopted.find((a) => a.workload.id === running.id);
    expect(mine).toMatchObject({
      runnerToken: expect.stringMatching(/^token-/),
      socketDir,
      isolation: false,
    });
    expect(adopted.some((a) => a.workload.id === other.id)).toBe(false);
    expect(await inspectStatus(engine.docker, stopped.id)).toBe(404);
    expect(await inspectStatus(engine.docker, running.id)).toBe("exists");
    const labels = (await engine.docker.getContainer(running.id).inspect()).Config.Labels;
    expect(labels?.[HOST_LABEL]).toBe(hostId);
    // The adopted workload is the container: stopping it through adoption removes it.
    await mine?.workload.stop("test");
    expect(await inspectStatus(engine.docker, running.id)).toBe(404);
  });
});

/** A host-side relay.sock answering each line with `pong:<line>`, reachable by the container's root. */
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
