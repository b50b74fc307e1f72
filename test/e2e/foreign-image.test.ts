/**
 * Any Linux image as a project's environment: the host brings the runner (the runner kit, mounted
 * read-only) into images with no Node and nothing of ours, built here from this machine's files
 * (test/support/python-image.ts): one with python3, a shell and tools, one with python3 alone.
 * The scripted droid runs in both; each real agent CLI runs a turn in the Python image (the
 * caller's tool relayed, its shell command asked for and then run by the image's python3); an
 * image of another architecture is refused before anything starts. A project whose environment is
 * its repository's devcontainer.json (served by a real git server) runs in the image it names, with
 * its environment and its postCreateCommand as setup, and what cannot be honoured is named.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import type { ApprovalPolicy } from "../../protocol/approvals.js";
import { KitPaths } from "../../protocol/container-layout.js";
import type { SessionEvent } from "../../protocol/events.js";
import { bundles } from "../../scripts/build.js";
import { type FakeModel, type ModelLane, startFakeModel } from "../fixtures/fake-model/index.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { execAs, projectContainer } from "../support/docker-exec.js";
import { GitServer } from "../support/git-server.js";
import { LoopbackRegistry } from "../support/loopback-registry.js";
import { ensureOtherArchitectureImage, ensureTestImage, IMAGE_PROGRAM } from "../support/python-image.js";
import { TestStack } from "../support/stack.js";
import { MODELS, modelEnv, runtimeOfRequest, shellCall } from "./agent-cli.js";
import { failureReport } from "./agent-failure-report.js";
import { runStep, spawnDroid, text } from "./support.js";

type ApprovalRequestEvent = Extract<SessionEvent, { type: "approval_request" }>;

const LOOKUP = {
  name: "lookup",
  description: "Look a word up in the caller's dictionary.",
  inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
};
/** Shell commands ask; everything else runs unasked. */
const POLICY: ApprovalPolicy = { rules: [{ kind: "shell", action: "ask" }], default: "allow" };

const images = dockerContext().agentImages ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");
const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });

let stack: TestStack;
let caller: TestCaller;
let fakeModel: FakeModel;
let pythonImage = "";
let bareImage = "";
let gitServer: GitServer | undefined;
let registry: LoopbackRegistry | undefined;

beforeAll(async () => {
  fakeModel = await startFakeModel({ laneOf: runtimeOfRequest });
  pythonImage = await ensureTestImage(docker(), "python");
  bareImage = await ensureTestImage(docker(), "python-bare");
  gitServer = await GitServer.start();
  registry = await LoopbackRegistry.start();
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: {
      ...modelEnv(fakeModel.url),
      // The git server is on loopback.
      OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES: "1",
      // Every image this file names is on the engine or on the loopback registry below.
      OUBLIETTE_IMAGE_PULL: "missing",
    },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  caller.answerWith((request) =>
    request.tool === "send_response" ? { result: { sent: request.arguments } } : "ignore",
  );
}, 300_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await fakeModel?.close();
  await gitServer?.close();
  await registry?.close();
});

async function projectIn(image: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `foreign-${crypto.randomUUID().slice(0, 8)}`,
    image,
    ...extra,
  });
  return created.project_id;
}

type ExecOutput = { exit_code?: number | null; stdout?: string; stderr?: string; error?: string };

describe("the scripted droid in an image with python3 and a shell, and no Node", () => {
  let projectId = "";
  let sessionId = "";

  beforeAll(async () => {
    projectId = await projectIn(pythonImage);
    sessionId = await spawnDroid(caller, { projectId });
  }, 180_000);

  afterAll(async () => {
    if (projectId !== "")
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
  });

  it("runs the image's python3 as the droid, and relays the caller's tool", async () => {
    const ran = (await runStep(caller, sessionId, {
      op: "exec",
      argv: ["python3", "-c", "import sys; print('py', 6 * 7, sys.version_info.major)"],
    })) as ExecOutput;
    expect(ran.stderr).toBe("");
    expect(ran).toMatchObject({ exit_code: 0, stdout: "py 42 3\n" });
    const out = await runStep(caller, sessionId, {
      op: "call",
      name: "ant_send_response",
      arguments: { to: "py" },
    });
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ sent: { to: "py" } });
  });

  it("keeps the image's PATH first: its /usr/local/bin wins, the kit's programs come last", async () => {
    const ran = (await runStep(caller, sessionId, {
      op: "exec",
      argv: ["sh", "-c", `echo "$PATH"; ${IMAGE_PROGRAM.name}; command -v node`],
    })) as ExecOutput;
    expect(ran.exit_code).toBe(0);
    const [path, program, node] = (ran.stdout ?? "").trim().split("\n");
    const dirs = path?.split(":") ?? [];
    expect(dirs[0]).toBe("/usr/local/bin");
    // After every directory of the image's own PATH (the agent's npm prefix may follow).
    expect(dirs.indexOf(KitPaths.bin)).toBeGreaterThan(dirs.indexOf("/bin"));
    expect(dirs.indexOf("/bin")).toBeGreaterThan(0);
    expect(program).toBe(IMAGE_PROGRAM.output);
    // The image has no node: the one found is the kit's.
    expect(node).toBe(KitPaths.node);
  });

  it("leaves nothing of ours writable: the kit is read-only to the droid and to root alike", async () => {
    const droid = (await runStep(caller, sessionId, {
      op: "exec",
      argv: ["sh", "-c", `echo x > ${KitPaths.node}; echo x > ${KitPaths.root}/new-file`],
    })) as ExecOutput;
    expect(droid.exit_code).not.toBe(0);
    const container = await projectContainer(docker(), projectId);
    const root = await execAs(container, "0", ["sh", "-c", `echo x > ${KitPaths.root}/bin/node`]);
    expect(root.code).not.toBe(0);
    expect(root.out).toContain("Read-only file system");
    const info = await container.inspect();
    const kit = info.Mounts.find((mount) => mount.Destination === KitPaths.root);
    expect(kit?.RW).toBe(false);
    expect(info.Config.Labels["oubliette.kit"]).toMatch(/^[0-9a-f]{16}$/);
    // Nothing was written into the image: its files are what it was imported with.
    const changes = await container.changes();
    expect((changes ?? []).filter((change: { Path: string }) => change.Path.startsWith("/usr"))).toEqual([]);
  });

  it("runs `container exec` as the exec user through the kit's setpriv", async () => {
    const out = await caller.ok<{ exit_code: number; stdout: string }>("container", {
      action: "exec",
      project_id: projectId,
      command: ["python3", "-c", "import os; print(os.getuid(), 7 * 6)"],
    });
    expect(out).toMatchObject({ exit_code: 0, stdout: "1000 42\n" });
  });
});

describe("the scripted droid in an image with python3 alone (no shell)", () => {
  let projectId = "";

  afterAll(async () => {
    if (projectId !== "")
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
  });

  it("starts, runs python3 and relays the caller's tool", async () => {
    projectId = await projectIn(bareImage);
    const sessionId = await spawnDroid(caller, { projectId });
    const ran = (await runStep(caller, sessionId, {
      op: "exec",
      argv: ["python3", "-c", "import os; print(os.path.exists('/bin/sh'), os.path.exists('/usr/bin/node'))"],
    })) as ExecOutput;
    expect(ran).toMatchObject({ exit_code: 0, stdout: "False False\n" });
    const out = await runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} });
    expect(out.is_error).toBe(false);
  }, 180_000);
});

describe("an image of another architecture", () => {
  it("is refused at container start with the reason, and no container is made", async () => {
    const image = await ensureOtherArchitectureImage(docker());
    const projectId = await projectIn(image);
    try {
      const started = await caller.call("container", { action: "start", project_id: projectId });
      expect(started.isError).toBe(true);
      const message = JSON.stringify(started.content);
      expect(message).toContain("linux/arm64");
      expect(message).toContain("linux/amd64");
      const listed = await docker().listContainers({
        all: true,
        filters: { label: [`oubliette.project=${projectId}`] },
      });
      expect(listed).toEqual([]);
    } finally {
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 60_000);
});

describe("an image the engine does not have", () => {
  const projects: string[] = [];

  afterAll(async () => {
    for (const projectId of projects)
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
  });

  /** The text of /hello.txt in the project's container, read by the kit's Node as root. */
  async function hello(projectId: string): Promise<string> {
    const container = await projectContainer(docker(), projectId);
    const read = await execAs(container, "0", [
      KitPaths.node,
      "-e",
      "try { process.stdout.write(require('fs').readFileSync('/hello.txt', 'utf8')) } catch { process.stdout.write('none') }",
    ]);
    return read.out;
  }

  it("is pulled from its registry, runs, and stays pinned to those bytes until image_rebuild", async () => {
    if (registry === undefined) throw new Error("the registry did not start");
    // Bytes of its own: an engine that pulled an image before keeps its layers and would not fetch them.
    const name = `acme/tiny-${crypto.randomUUID().slice(0, 8)}`;
    const bytes = `the pulled bytes of ${name}\n`;
    const ref = await registry.add(name, "1", { "hello.txt": bytes });
    const projectId = await projectIn(ref);
    projects.push(projectId);
    const started = await caller.ok<{ started: boolean }>("container", {
      action: "start",
      project_id: projectId,
    });
    expect(started.started).toBe(true);
    expect(
      registry.requests.some((line) => /GET \/v2\/acme\/tiny-[0-9a-f]+\/blobs\/sha256:/.test(line)),
    ).toBe(true);
    // The pull's progress was the container start job's.
    const listed = await caller.ok<{ jobs: { tool: string; progress?: { message: string } }[] }>("job", {
      action: "list",
      project_id: projectId,
    });
    expect(listed.jobs.map((job) => job.progress?.message)).toContain(`pulled ${ref}`);
    const pulledId = (await docker().getImage(ref).inspect()).Id;
    expect((await (await projectContainer(docker(), projectId)).inspect()).Image).toBe(pulledId);
    // The droid runs in it: an image holding one text file and nothing else.
    const sessionId = await spawnDroid(caller, { projectId });
    const ran = (await runStep(caller, sessionId, {
      op: "exec",
      argv: [KitPaths.node, "-e", "process.stdout.write(require('fs').readFileSync('/hello.txt', 'utf8'))"],
    })) as ExecOutput;
    expect(ran.stdout).toBe(bytes);

    // The reference now names other bytes on this engine: a new container of the project keeps the pinned ones.
    const [repo, tag] = [ref.slice(0, ref.lastIndexOf(":")), ref.slice(ref.lastIndexOf(":") + 1)];
    await docker().getImage(bareImage).tag({ repo, tag });
    await caller.ok("container", { action: "stop", project_id: projectId });
    await caller.ok("container", { action: "start", project_id: projectId });
    expect((await (await projectContainer(docker(), projectId)).inspect()).Image).toBe(pulledId);
    expect(await hello(projectId)).toBe(bytes);
    // image_rebuild takes what the reference names now.
    await caller.ok("image_rebuild", { project_id: projectId });
    const rebuilt = await (await projectContainer(docker(), projectId)).inspect();
    expect(rebuilt.Image).toBe((await docker().getImage(bareImage).inspect()).Id);
    expect(await hello(projectId)).toBe("none");
  }, 180_000);

  it("is pulled ahead by `host-agent images --pull`; one no registry has fails the command, saying why", async () => {
    if (registry === undefined) throw new Error("the registry did not start");
    const ref = await registry.add(`acme/ahead-${crypto.randomUUID().slice(0, 8)}`, "2", {
      "hello.txt": "ahead\n",
    });
    const dataDir = mkdtempSync(join(tmpdir(), "oub-images-pull-"));
    const images = (pull: string) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [bundles.hostAgent, "images", "--agents", "none", "--pull", pull, "--data-dir", dataDir],
          { env: { PATH: process.env.PATH ?? "", DOCKER_HOST: `unix://${dockerContext().dockerSocket}` } },
          (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
        );
      });
    try {
      const pulled = await images(ref);
      expect(pulled.stderr).toContain(`pulled ${ref}`);
      expect(pulled.code).toBe(0);
      const id = (await docker().getImage(ref).inspect()).Id;
      expect(JSON.parse(pulled.stdout).images[ref]).toBe(id);
      const missing = await images(`${registry.host}/acme/nothing-here:1`);
      // A command that cannot do what was asked exits 2 (host-agent/src/main.ts).
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("could not pull it");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it("is refused, saying so plainly, when no registry answers for it, and nothing starts", async () => {
    // A loopback port nobody listens on: the engine's pull fails at once.
    const closed = await LoopbackRegistry.start();
    const host = closed.host;
    await closed.close();
    const projectId = await projectIn(`${host}/acme/absent:1`);
    projects.push(projectId);
    const started = await caller.call("container", { action: "start", project_id: projectId });
    expect(started.isError).toBe(true);
    const message = JSON.stringify(started.content);
    expect(message).toContain("could not pull it");
    expect(message).toContain("docker load -i image.tar");
    const listed = await docker().listContainers({
      all: true,
      filters: { label: [`oubliette.project=${projectId}`] },
    });
    expect(listed).toEqual([]);
  }, 120_000);
});

describe("a project whose environment is its repository's devcontainer.json", () => {
  const projects: string[] = [];

  afterAll(async () => {
    for (const projectId of projects)
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
  });

  async function devcontainerProject(files: Record<string, string>): Promise<string> {
    if (gitServer === undefined) throw new Error("the git server did not start");
    const remote = gitServer.createRepo(`acme/dc-${crypto.randomUUID().slice(0, 8)}`, {
      "README.md": "a repository with a dev container\n",
      ...files,
    });
    const created = await caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `devcontainer-${crypto.randomUUID().slice(0, 8)}`,
      environment: "devcontainer",
      remote_url: remote,
    });
    projects.push(created.project_id);
    return created.project_id;
  }

  it("runs in its image with its environment, its postCreateCommand once as setup, and names what it cannot honour", async () => {
    const projectId = await devcontainerProject({
      ".devcontainer/devcontainer.json": `{
        // The test's Python image, built from this machine's files.
        "name": "python",
        "image": ${JSON.stringify(pythonImage)},
        "containerEnv": { "GREETING": "from-devcontainer" },
        "postCreateCommand": "echo ran >> setup-count.txt",
        "features": { "ghcr.io/devcontainers/features/node:1": {} },
        "privileged": true, // asked for, never granted
      }`,
    });
    const started = await caller.ok<{ started: boolean; warnings?: string[] }>("container", {
      action: "start",
      project_id: projectId,
    });
    expect(started.started).toBe(true);
    expect(started.warnings).toHaveLength(1);
    expect(started.warnings?.[0]).toContain("features");
    expect(started.warnings?.[0]).toContain("privileged");
    const container = await projectContainer(docker(), projectId);
    const info = await container.inspect();
    expect(info.Config.Image).toBe(pythonImage);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.Config.Env).toContain("GREETING=from-devcontainer");

    const first = await spawnDroid(caller, { projectId });
    // The session hears the warning too.
    const warned = await caller.waitFor(
      (e) => e.session_id === first && e.type === "environment_warning",
      30_000,
      "the session's environment warning",
    );
    expect(JSON.stringify(warned)).toContain("features");
    const ran = (await runStep(caller, first, {
      op: "exec",
      argv: ["sh", "-c", 'echo "$GREETING"; cat setup-count.txt'],
    })) as ExecOutput;
    expect(ran).toMatchObject({ exit_code: 0, stdout: "from-devcontainer\nran\n" });
    // A second session of the workspace: the setup already succeeded there, so it does not run again.
    const second = await spawnDroid(caller, { projectId });
    const again = (await runStep(caller, second, {
      op: "exec",
      argv: ["cat", "setup-count.txt"],
    })) as ExecOutput;
    expect(again.stdout).toBe("ran\n");
  }, 240_000);

  it.each([
    [
      "one of 5 MiB",
      { ".devcontainer/devcontainer.json": `{"image": "x", "pad": "${"x".repeat(5 * 1024 * 1024)}"}` },
      /bytes, at most 262144/,
    ],
    ["one that is not JSON", { ".devcontainer.json": "image: python:3.12\n" }, /devcontainer\.json/],
    [
      "one without an image",
      { ".devcontainer/devcontainer.json": '{"build": {"dockerfile": "Dockerfile"}}' },
      /image/,
    ],
    ["none at all", {}, /neither \.devcontainer\/devcontainer\.json nor \.devcontainer\.json/],
  ])(
    "refuses %s at container start, saying why, and starts nothing",
    async (_name, files, reason) => {
      const projectId = await devcontainerProject(files as Record<string, string>);
      const started = await caller.call("container", { action: "start", project_id: projectId });
      expect(started.isError).toBe(true);
      expect(JSON.stringify(started.content)).toMatch(reason);
      const listed = await docker().listContainers({
        all: true,
        filters: { label: [`oubliette.project=${projectId}`] },
      });
      expect(listed).toEqual([]);
    },
    120_000,
  );
});

describe.concurrent.each(runtimes)("the %s CLI in the Python image", (runtime) => {
  let agentCaller: TestCaller;
  let model: ModelLane;
  let projectId = "";
  let sessionId = "";

  beforeAll(async () => {
    agentCaller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, `foreign-${runtime}`);
    model = fakeModel.lane(runtime);
  });

  afterEach((context) => {
    if (context.task.result?.state === "fail")
      process.stderr.write(
        `${failureReport(
          `${runtime} in the Python image, "${context.task.name}"`,
          model.requests,
          agentCaller.events.filter((e) => e.session_id === sessionId),
        )}\n`,
      );
    const left = model.remaining;
    model.reset();
    expect(left, "scripted replies the CLI never asked for").toBe(0);
  });

  afterAll(async () => {
    if (projectId !== "")
      await agentCaller.call("project", { action: "delete", project_id: projectId, force: true });
    await agentCaller?.close();
  });

  it("relays the caller's tool, asks before its shell runs the image's python3, and the model sees the output", async () => {
    const command = `python3 -c "open('made-by-python.txt', 'w').write(str(6 * 7)); print('py-' + str(6 * 7))"`;
    model.script([
      { text: "Let me look that up.", tool: "ant_lookup", arguments: { word: "oubliette" } },
      { text: "Now the script.", ...shellCall(runtime, command) },
      { text: "Done with python." },
    ]);
    agentCaller.answerWith((request) =>
      request.tool === "lookup" ? { result: "a dungeon reached through a trapdoor" } : "ignore",
    );
    const created = await agentCaller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `foreign-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
      image: pythonImage,
      default_agent: runtime,
      default_model: MODELS[runtime],
      limits: { memory_mb: 2048 },
      approval_policy: POLICY,
    });
    projectId = created.project_id;
    const since = agentCaller.events.length;
    const spawned = await agentCaller.ok<{ session_id: string; agent: string }>("session", {
      action: "spawn",
      project_id: projectId,
      caller_id: "ant",
      caller_tools: [LOOKUP],
      prompt: "Look up oubliette, then run the python script.",
    });
    sessionId = spawned.session_id;
    expect(spawned.agent).toBe(runtime);
    const request = (await agentCaller.waitFor(
      (e) =>
        e.session_id === sessionId && e.type === "approval_request" && agentCaller.events.indexOf(e) >= since,
      180_000,
      "the shell command's approval request",
    )) as ApprovalRequestEvent;
    expect(request).toMatchObject({ kind: "shell", agent: runtime });
    expect(request.command).toContain("made-by-python.txt");
    await agentCaller.ok("approval_response", {
      session_id: sessionId,
      request_id: request.request_id,
      decision: "allow",
    });
    await agentCaller.waitFor(
      (e) => e.session_id === sessionId && e.type === "completion" && e.message_seq === 1,
      180_000,
      "the completion of the turn",
    );
    const results = model
      .toolResults(0)
      .map((r) => r.text)
      .join("\n");
    expect(results).toContain("a dungeon reached through a trapdoor");
    expect(results).toContain("py-42");
    const container = await projectContainer(docker(), projectId);
    const made = await execAs(container, "0", [
      "python3",
      "-c",
      "print(open('/workspace/default/made-by-python.txt').read())",
    ]);
    expect(made).toMatchObject({ code: 0 });
    expect(made.out.trim()).toBe("42");
  }, 300_000);
});
