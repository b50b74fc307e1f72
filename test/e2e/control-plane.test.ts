/**
 * The control plane end to end: the official MCP SDK client as the caller, the Worker under
 * wrangler dev, two Docker host-agents, project containers with real workspaces.
 */
import { access } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureDockerEngine } from "../../scripts/docker/engine.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { endSession, runStep, SEND_RESPONSE, spawnDroid } from "./support.js";

const PROJECT_LABEL = "oubliette.project";

let stack: TestStack;
let admin: TestCaller;
let hostA: HostAgent;
let hostB: HostAgent;
const docker = (await ensureDockerEngine({ install: false, log: () => {} })).docker;

beforeAll(async () => {
  stack = await TestStack.start();
  hostA = await stack.addHost({ runtime: "docker", image: dockerContext().droidImage, maxSessions: 6 });
  hostB = await stack.addHost({ runtime: "docker", image: dockerContext().droidImage, maxSessions: 6 });
  admin = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  admin.answerWith(() => "ignore");
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await stack?.stop();
});

/** Projects a test made; whatever the test left, they go after it (so no test sees another's load). */
const made = new Set<string>();

afterEach(async () => {
  for (const projectId of made)
    await admin.call("project", { action: "delete", project_id: projectId, force: true });
  made.clear();
});

async function createProject(caller: TestCaller, config: Record<string, unknown> = {}): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `e2e-${crypto.randomUUID().slice(0, 8)}`,
    ...config,
  });
  made.add(created.project_id);
  return created.project_id;
}

/** The connected hosts with the most free room now (where a new project goes). */
async function roomiest(): Promise<string[]> {
  const { hosts } = await admin.ok<{
    hosts: {
      host_id: string;
      connected: boolean;
      draining: boolean;
      sessions: number;
      max_sessions: number | null;
    }[];
  }>("host", { action: "list" });
  const open = hosts.filter((h) => h.connected && !h.draining);
  const free = (h: (typeof open)[number]) => (h.max_sessions ?? 0) - h.sessions;
  const most = Math.max(...open.map(free));
  return open.filter((h) => free(h) === most).map((h) => h.host_id);
}

interface Spawned {
  session_id: string;
  host_id: string;
  workspace_id: string;
}

/** Spawns a droid in `projectId` and waits until it is up. */
async function spawnIn(projectId: string, extra: Record<string, unknown> = {}): Promise<Spawned> {
  const info = await admin.ok<Spawned>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    ...extra,
  });
  await admin.waitForOutput(info.session_id, (d) => d.op === "ready", 60_000);
  return info;
}

async function exec(projectId: string, command: string[] | string) {
  return admin.ok<{ exit_code: number | null; stdout: string; stderr: string }>("container", {
    action: "exec",
    project_id: projectId,
    command,
  });
}

/** `ls` of some directories, one name per line, with node (an argv, no shell). */
function LIST(...dirs: string[]): string[] {
  const script =
    "for (const d of process.argv.slice(1)) for (const n of require('fs').readdirSync(d)) console.log(n)";
  return ["node", "-e", script, ...dirs];
}

/** `cat` of a file, with node. */
function READ(path: string): string[] {
  return ["node", "-e", "process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", path];
}

async function containersOf(projectId: string) {
  return docker.listContainers({ all: true, filters: { label: [`${PROJECT_LABEL}=${projectId}`] } });
}

async function until<T>(
  what: string,
  check: () => Promise<T | null | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function statusOf(sessionId: string): Promise<string> {
  return (await admin.ok<{ status: string }>("session", { action: "get", session_id: sessionId })).status;
}

describe("a project, its container and its workspaces", () => {
  it("runs two sessions in one container, in different workspaces; exec sees what a droid wrote; logs", async () => {
    const projectId = await createProject(admin);
    const first = await spawnIn(projectId);
    const second = await spawnIn(projectId, { workspace_id: "second", create_workspace: true });
    expect(first.workspace_id).toBe("default");
    expect(second.workspace_id).toBe("second");
    expect(second.host_id).toBe(first.host_id);
    expect(await containersOf(projectId)).toHaveLength(1);

    const wrote = await runStep(admin, first.session_id, {
      op: "fs",
      action: "write",
      path: "hello.txt",
      text: "from the droid",
    });
    expect(wrote).toMatchObject({ ok: true });
    const cat = await exec(projectId, READ("/workspace/default/hello.txt"));
    expect(cat).toMatchObject({ exit_code: 0, stdout: "from the droid" });
    // The default workspace was git-initialised by the host.
    const listing = await exec(projectId, LIST("/workspace/default", "/workspace"));
    expect(listing.stdout.split("\n")).toEqual(
      expect.arrayContaining([".git", "hello.txt", "default", "second"]),
    );
    const failing = await exec(projectId, LIST("/nonexistent"));
    expect(failing.exit_code).not.toBe(0);
    // A command line runs under the image's own shell, in the container (never on the host).
    const line = await exec(projectId, 'cd /workspace/default && echo "$((6 * 7)) $PWD" && exit 3');
    expect(line).toMatchObject({ exit_code: 3, stdout: "42 /workspace/default\n" });
    // The image has the tools an agent's shell reaches for: ls, grep, sed, git...
    const tools = await exec(
      projectId,
      "cd /workspace/default && ls -a | grep -x hello.txt && echo abc | sed s/b/x/ && " +
        "git -c safe.directory='*' status --porcelain && git --version",
    );
    expect(tools.exit_code).toBe(0);
    expect(tools.stdout).toContain("hello.txt\naxc\n?? hello.txt\n");
    expect(tools.stdout).toMatch(/git version \d/);

    const logs = await admin.ok<{ lines: string[] }>("container", {
      action: "logs",
      project_id: projectId,
      tail: 500,
    });
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join("\n")).toContain(first.session_id);

    const workspaces = await admin.ok<{ workspaces: { workspace_id: string; running_sessions: string[] }[] }>(
      "workspace",
      {
        action: "list",
        project_id: projectId,
      },
    );
    expect(workspaces.workspaces).toEqual([
      expect.objectContaining({ workspace_id: "default", running_sessions: [first.session_id] }),
      expect.objectContaining({ workspace_id: "second", running_sessions: [second.session_id] }),
    ]);
    const listed = await admin.ok<{ sessions: { session_id: string }[] }>("session", {
      action: "list",
      project_id: projectId,
      status: "running",
    });
    expect(listed.sessions.map((s) => s.session_id).sort()).toEqual(
      [first.session_id, second.session_id].sort(),
    );

    // The container cannot be recreated under its sessions; it can once they ended.
    const refused = await admin.call("image_rebuild", { project_id: projectId });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("running sessions");
    await endSession(admin, first.session_id);
    await endSession(admin, second.session_id);
    const before = (await containersOf(projectId))[0]?.Id;
    const rebuilt = await admin.ok<{ container_id: string }>("image_rebuild", { project_id: projectId });
    expect(rebuilt.container_id).not.toBe(before);
    // The workspaces outlive the container.
    expect((await exec(projectId, READ("/workspace/default/hello.txt"))).stdout).toBe("from the droid");

    // Delete: the container and the workspaces go from the host.
    const deleted = await admin.ok<{ host_cleanup: string }>("project", {
      action: "delete",
      project_id: projectId,
    });
    expect(deleted.host_cleanup).toBe("done");
    expect(await containersOf(projectId)).toHaveLength(0);
    const dataDirs = [1, 2].map((n) => join(stack.dir, `data-${n}`, "projects", projectId));
    for (const dir of dataDirs) await expect(access(dir)).rejects.toThrow();
  }, 180_000);

  it("hides the other workspace from a session when the project isolates workspaces", async () => {
    const projectId = await createProject(admin, { workspace_isolation: true });
    const mine = await spawnIn(projectId);
    await spawnIn(projectId, { workspace_id: "other", create_workspace: true });
    await runStep(admin, mine.session_id, { op: "fs", action: "write", path: "mine.txt", text: "x" });
    const peek = await runStep(admin, mine.session_id, {
      op: "fs",
      action: "list",
      path: "/workspace/other",
    });
    expect(peek).toMatchObject({ ok: false, code: "EACCES" });
    const own = await runStep(admin, mine.session_id, { op: "fs", action: "list", path: "." });
    expect(own).toMatchObject({ ok: true, entries: expect.arrayContaining(["mine.txt"]) });
    // The user looking inside (exec) sees every workspace.
    expect((await exec(projectId, LIST("/workspace/other"))).exit_code).toBe(0);
  }, 180_000);
});

describe("container start and stop", () => {
  it("start makes the git-initialised default workspace and the container; stop ends the sessions in it", async () => {
    const projectId = await createProject(admin);
    const started = await admin.ok<{ container_id: string; started: boolean }>("container", {
      action: "start",
      project_id: projectId,
    });
    expect(started.started).toBe(true);
    expect((await exec(projectId, LIST("/workspace/default"))).stdout.split("\n")).toContain(".git");
    const again = await admin.ok<{ container_id: string; started: boolean }>("container", {
      action: "start",
      project_id: projectId,
    });
    expect(again).toMatchObject({ container_id: started.container_id, started: false });
    // The spawn prompt reaches the droid even though it is sent before the agent has started.
    const prompt = JSON.stringify({
      steps: [{ op: "fs", action: "write", path: "from-prompt.txt", text: "p" }],
    });
    const session = await spawnIn(projectId, { prompt });
    await until("the prompt's file", async () =>
      (await exec(projectId, LIST("/workspace/default"))).stdout.includes("from-prompt.txt"),
    );
    await admin.ok("container", { action: "stop", project_id: projectId, reason: "maintenance" });
    await until("the session to end", async () =>
      (await statusOf(session.session_id)) !== "running" ? true : null,
    );
    const events = await admin.ok<{ events: { type: string; reason?: string }[] }>("session", {
      action: "events",
      session_id: session.session_id,
      limit: 1000,
    });
    expect(events.events.at(-1)).toMatchObject({
      type: "session_ended",
      reason: expect.stringContaining("maintenance"),
    });
    const exec2 = await admin.call("container", {
      action: "exec",
      project_id: projectId,
      command: ["node", "-e", "1"],
    });
    expect(exec2.isError).toBe(true);
  }, 120_000);
});

describe("turn-aware lifetime", () => {
  it("stops an idle session after its idle timeout, but not one waiting on a caller tool", async () => {
    const projectId = await createProject(admin, { limits: { idle_timeout_seconds: 3 } });
    const idle = await spawnIn(projectId);
    const waiting = await admin.ok<Spawned>("session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
      caller_id: "ant",
      caller_tools: [SEND_RESPONSE],
      caller_timeout_seconds: 60,
    });
    await admin.waitForOutput(waiting.session_id, (d) => d.op === "ready", 60_000);
    // A call nobody answers (the admin caller ignores requests): a turn and a call in flight.
    void admin
      .runScript(
        waiting.session_id,
        { id: "blocked", steps: [{ op: "call", name: "ant_send_response", arguments: {} }] },
        90_000,
      )
      .catch(() => {});
    await until("the caller tool request", async () =>
      admin.events.some((e) => e.type === "caller_tool_request" && e.session_id === waiting.session_id),
    );
    const ended = await until(
      "the idle session to end",
      async () => ((await statusOf(idle.session_id)) === "ended" ? true : null),
      30_000,
    );
    expect(ended).toBe(true);
    const events = await admin.ok<{ events: { type: string; reason?: string }[] }>("session", {
      action: "events",
      session_id: idle.session_id,
      limit: 1000,
    });
    expect(events.events.at(-1)).toMatchObject({
      type: "session_ended",
      reason: expect.stringContaining("idle"),
    });
    // Well past the idle timeout, the session waiting on its caller still runs.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(await statusOf(waiting.session_id)).toBe("running");
    // Its workspace stayed.
    expect((await exec(projectId, LIST("/workspace"))).stdout).toContain("default");
  }, 180_000);
});

describe("tokens and hosts", () => {
  it("cuts off a token revoked mid-session within 5 s", async () => {
    const projectId = await createProject(admin);
    const issued = await admin.ok<{ token: string; token_id: string }>("token", {
      action: "create",
      name: "teammate",
      scope: `project:${projectId}`,
    });
    const mate = await TestCaller.connect(stack.mcpUrl, issued.token, "teammate", { reconnectAttempts: 0 });
    const sessionId = await spawnDroid(mate, { callerId: "mate", projectId });
    expect((await mate.call("session", { action: "get", session_id: sessionId })).isError).toBeFalsy();
    // A read of another project is refused, whatever the session.
    const other = await createProject(admin);
    const refused = await mate.call("project", { action: "get", project_id: other });
    expect(JSON.stringify(refused.content)).toContain("forbidden");

    await admin.ok("token", { action: "revoke", token_id: issued.token_id });
    const start = Date.now();
    await until(
      "the revoked token to be refused",
      async () => {
        try {
          await mate.call("session", { action: "get", session_id: sessionId });
          return null;
        } catch {
          return true;
        }
      },
      10_000,
    );
    const took = Date.now() - start;
    console.log(`revoked token refused after ${took} ms`);
    expect(took).toBeLessThan(5_000);
    await mate.close().catch(() => {});
  }, 120_000);

  it("places projects by capacity, sessions follow their project, and a drained host gets nothing new", async () => {
    const p1 = await createProject(admin);
    const expected1 = await roomiest();
    const s1 = await spawnIn(p1);
    expect(expected1).toContain(s1.host_id);
    const p2 = await createProject(admin);
    const expected2 = await roomiest();
    const s2 = await spawnIn(p2);
    expect(expected2).toContain(s2.host_id);
    // Both hosts start empty: the second project goes to the other one.
    expect(s2.host_id).not.toBe(s1.host_id);
    // A project's next session follows it, even to the fuller host.
    expect((await spawnIn(p1)).host_id).toBe(s1.host_id);
    expect((await spawnIn(p1)).host_id).toBe(s1.host_id);

    await admin.ok("host", { action: "drain", host_id: s1.host_id });
    const p3 = await createProject(admin);
    expect((await spawnIn(p3)).host_id).toBe(s2.host_id);
    const p4 = await createProject(admin);
    expect((await spawnIn(p4)).host_id).toBe(s2.host_id);
    // Its project takes no new session while it drains; its running ones go on.
    const onDrained = await admin.call("session", { action: "spawn", project_id: p1, new_session: true });
    expect(JSON.stringify(onDrained.content)).toContain("draining");
    expect(await statusOf(s1.session_id)).toBe("running");
    await admin.ok("host", { action: "drain", host_id: s1.host_id, drain: false });
    for (const p of [p1, p2, p3, p4])
      await admin.ok("project", { action: "delete", project_id: p, force: true });
  }, 240_000);

  it("refuses an enrolled host's token once it is revoked", async () => {
    const hostId = `enrolled-${crypto.randomUUID().slice(0, 8)}`;
    const enrolled = await admin.ok<{ token: string }>("host", { action: "enrol", host_id: hostId });
    const host = await stack.addHost({
      runtime: "docker",
      image: dockerContext().droidImage,
      hostId,
      hostToken: enrolled.token,
    });
    const listed = await admin.ok<{
      hosts: { host_id: string; connected: boolean; token_id: string | null }[];
    }>("host", { action: "list" });
    expect(listed.hosts.find((h) => h.host_id === hostId)).toMatchObject({
      connected: true,
      token_id: expect.stringMatching(/^tok_/),
    });
    await admin.ok("host", { action: "revoke", host_id: hostId });
    // Cut off and refused on reconnecting, the host-agent gives up.
    const exit = await host.exited;
    expect(exit.code).not.toBe(0);
    const after = await admin.ok<{ hosts: { host_id: string; connected: boolean }[] }>("host", {
      action: "list",
    });
    expect(after.hosts.find((h) => h.host_id === hostId)?.connected ?? false).toBe(false);
    expect(hostA.process.exitCode).toBeNull();
    expect(hostB.process.exitCode).toBeNull();
  }, 120_000);
});
