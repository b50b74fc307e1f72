/**
 * Every real agent CLI runs as its session's own uid, end to end: two sessions of one runtime in
 * one project's container (same workspace), each CLI driven by the fake model through a turn.
 * Read from the host: the runner is root, each session's processes (the CLI, its MCP server, what
 * it started) are one uid of their own. Then the kernel is asked, as one session's uid and group:
 * its own agent's /proc/<pid>/environ opens, the other session's does not. The five runtimes run
 * at once, each answered by its own lane of the fake model.
 */
import { readFileSync } from "node:fs";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import { type FakeModel, startFakeModel } from "../fixtures/fake-model/index.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { containerProcesses, envValue, execAs, projectContainer } from "../support/docker-exec.js";
import { TestStack } from "../support/stack.js";
import { runtimeOfRequest } from "./agent-cli.js";

const HOST_KEY = "sk-oubliette-e2e-identity-key-0123456789";
const MODELS: Partial<Record<AgentRuntime, string>> = {
  claude: "claude-sonnet-4-5",
  droid: "claude-sonnet-4-5",
  codex: "gpt-5",
  opencode: "gpt-5",
  gemini: "gemini-2.5-pro",
};
const images = dockerContext().agentImages ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");

let stack: TestStack;
let caller: TestCaller;
let model: FakeModel;
const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });

beforeAll(async () => {
  model = await startFakeModel({ laneOf: runtimeOfRequest });
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: {
      OUBLIETTE_ANTHROPIC_API_KEY: HOST_KEY,
      OUBLIETTE_ANTHROPIC_BASE_URL: model.url,
      OUBLIETTE_OPENAI_API_KEY: HOST_KEY,
      OUBLIETTE_OPENAI_BASE_URL: model.url,
      OUBLIETTE_GEMINI_API_KEY: HOST_KEY,
      OUBLIETTE_GEMINI_BASE_URL: model.url,
    },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 180_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await model?.close();
});

interface Proc {
  pid: number;
  uid: number;
  gid: number;
  session: string | undefined;
  token: string | undefined;
}

/** The container's processes as the host sees them (host pids, real uid and gid, whose session). */
async function processes(container: Dockerode.Container): Promise<Proc[]> {
  return (await containerProcesses(container)).map((p) => ({
    pid: p.pid,
    uid: p.uid,
    gid: p.gid,
    session: envValue(p, "OUBLIETTE_SESSION_ID"),
    token: envValue(p, "OUBLIETTE_SESSION_TOKEN"),
  }));
}

// OUBLIETTE_TEST_AGENTS=none builds no CLI image: then there is nothing here to run.
it.skipIf(runtimes.length > 0)("needs the agent CLIs' images (OUBLIETTE_TEST_AGENTS names none)", () => {});

describe.concurrent.each(runtimes)("the %s runtime", (runtime) => {
  it("runs each session's agent as a uid of its own, which cannot read the other session's environment", async () => {
    const { project_id: projectId } = await caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `identity-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
      default_agent: runtime,
      default_model: MODELS[runtime],
      // Two CLIs in one container: OpenCode alone takes about 500 MiB.
      limits: { memory_mb: 3072 },
    });
    try {
      const sessions: string[] = [];
      for (const n of [1, 2]) {
        model.lane(runtime).script([{ text: `Session ${n} is here.` }]);
        const { session_id } = await caller.ok<{ session_id: string }>("session", {
          action: "spawn",
          project_id: projectId,
          new_session: true,
          prompt: `Say hello, session ${n}.`,
        });
        await caller.waitFor(
          (e) => e.session_id === session_id && e.type === "completion" && e.message_seq === 1,
          120_000,
          `session ${n}'s first turn`,
        );
        sessions.push(session_id);
      }
      const [a, b] = sessions as [string, string];
      const container = await projectContainer(docker(), projectId);
      const procs = await processes(container);
      const runner = procs.filter((p) => p.session === undefined && p.uid === 0);
      expect(runner.length).toBeGreaterThan(0);
      const ofA = procs.filter((p) => p.session === a);
      const ofB = procs.filter((p) => p.session === b);
      // The CLI and its MCP server (at least) of each session.
      expect(ofA.length).toBeGreaterThanOrEqual(2);
      expect(ofB.length).toBeGreaterThanOrEqual(2);
      const uidA = new Set(ofA.map((p) => p.uid));
      const uidB = new Set(ofB.map((p) => p.uid));
      expect(uidA.size).toBe(1);
      expect(uidB.size).toBe(1);
      const [ua] = [...uidA] as [number];
      const [ub] = [...uidB] as [number];
      expect(ua).toBeGreaterThanOrEqual(30_000);
      expect(ub).toBeGreaterThanOrEqual(30_000);
      expect(ua).not.toBe(ub);
      // The kernel, asked as A's uid and group: its own agent's environment opens, B's does not.
      const mine = ofA[0] as Proc;
      const theirs = ofB[0] as Proc;
      const own = await execAs(container, `${ua}:${mine.gid}`, [
        "cat",
        `/proc/${await containerPid(mine.pid)}/environ`,
      ]);
      expect(own.code).toBe(0);
      expect(own.out).toContain(mine.token ?? "missing");
      const other = await execAs(container, `${ua}:${mine.gid}`, [
        "cat",
        `/proc/${await containerPid(theirs.pid)}/environ`,
      ]);
      expect(other.code).not.toBe(0);
      expect(other.out).toContain("Permission denied");
      expect(other.out).not.toContain(theirs.token ?? "missing");
      // Nothing a session's agent serves on the container's loopback answers another session.
      for (const [address, owner] of listening(mine.pid)) {
        if (owner === 0) continue; // the runner's model forwarder
        const port = Number.parseInt(address.split(":")[1] ?? "0", 16);
        const other = owner === ua ? `${ub}:${theirs.gid}` : `${ua}:${mine.gid}`;
        const status = await httpStatusAs(container, other, port);
        expect({ port, owner, status }).toEqual({ port, owner, status: 401 });
      }
    } finally {
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 360_000);
});

/** The HTTP status a GET of 127.0.0.1:`port` gets, asked inside the container as `user`. */
async function httpStatusAs(container: Dockerode.Container, user: string, port: number): Promise<number> {
  const script = `require("node:http").get("http://127.0.0.1:${port}/", (r) => { console.log(r.statusCode); r.resume(); }).on("error", (e) => console.log(e.code))`;
  return Number((await execAs(container, user, ["node", "-e", script])).out.trim());
}

/** TCP sockets listening in a process's network namespace: [local address, owner uid]. */
function listening(hostPid: number): [string, number][] {
  const rows: [string, number][] = [];
  for (const table of ["tcp", "tcp6"]) {
    const lines = readFileSync(`/proc/${hostPid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f[3] === "0A") rows.push([String(f[1]), Number(f[7])]);
    }
  }
  return rows;
}

/** A host pid's pid inside its container (the last field of NSpid). */
async function containerPid(hostPid: number): Promise<number> {
  const line = readFileSync(`/proc/${hostPid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("NSpid:"));
  return Number(line?.trim().split(/\s+/).at(-1));
}
