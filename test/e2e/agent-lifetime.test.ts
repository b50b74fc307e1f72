/**
 * Every agent runtime gets all it is offered, and lives as long as its session, end to end with
 * each real CLI in Docker (the fake model on loopback as its provider, the official MCP SDK
 * client as the caller, wrangler dev, a Docker host-agent). For each runtime, asserting on what
 * the fake model received:
 * - spawned with a project key, its very first model request already offers the key's
 *   `oubliette_*` tools (and the caller's); the model calls `oubliette_workspace list` and sees
 *   the answer; later messages continue the same conversation;
 * - a host-agent killed (SIGKILL) while a caller tool answer is pending still delivers it;
 * - its process killed (SIGKILL) between turns is started again: the next message is answered in
 *   the same conversation, `agent_restarted` says so; killed again and again, the session fails
 *   with the reason.
 * The five runtimes run at once, each with its own caller and its own lane of the fake model, each
 * runtime's tests in order; the host-agent is killed once, when every runtime has its caller's
 * answer pending.
 */
import { readFileSync } from "node:fs";
import Dockerode from "dockerode";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { type FakeModel, type ModelLane, startFakeModel } from "../fixtures/fake-model/index.js";
import type { RecordedRequest } from "../fixtures/fake-model/types.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { Rendezvous } from "../support/rendezvous.js";
import { TestStack } from "../support/stack.js";
import { runtimeOfRequest } from "./agent-cli.js";

const HOST_KEY = "sk-oubliette-e2e-lifetime-0123456789abcdef";
const MODELS: Partial<Record<AgentRuntime, string>> = {
  claude: "claude-sonnet-4-5",
  droid: "claude-sonnet-4-5",
  codex: "gpt-5",
  opencode: "gpt-5",
  gemini: "gemini-2.5-pro",
};
const LOOKUP = {
  name: "lookup",
  description: "Look a word up in the caller's dictionary.",
  inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
};
/**
 * Runtimes that keep MCP tools out of the model's requests until its ToolSearch finds them (Droid
 * does; Claude Code sends them, marked deferred). Their model searches first, as a real one would.
 */
const DEFERS_MCP_TOOLS: ReadonlySet<AgentRuntime> = new Set(["droid"]);

const images = dockerContext().agentImages ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");
const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });

let stack: TestStack;
let host: HostAgent;
let fakeModel: FakeModel;

beforeAll(async () => {
  fakeModel = await startFakeModel({ laneOf: runtimeOfRequest });
  const model = fakeModel;
  stack = await TestStack.start();
  host = await stack.addHost({
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
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await fakeModel?.close();
});

/**
 * The host-agent killed (SIGKILL) and started again, once for all the runtimes: when each has its
 * caller's answer pending, or two minutes after the first had.
 */
const hostRestart = new Rendezvous(runtimes.length, 120_000, async () => {
  host.process.kill("SIGKILL");
  await host.exited;
  host = await stack.restartHost(host);
});

function completion(
  caller: TestCaller,
  sessionId: string,
  seq: number,
  timeoutMs = 120_000,
): Promise<SessionEvent> {
  return caller.waitFor(
    (e) => e.session_id === sessionId && e.type === "completion" && e.message_seq === seq,
    timeoutMs,
    `the completion of turn ${seq}`,
  );
}

/** The main (tool-offering) requests the model got since `from`, with the names of the tools offered. */
function mainRequests(model: ModelLane, from: number): RecordedRequest[] {
  return model.requests.slice(from).filter((r) => r.main);
}

/** The names of the tools a request offered, whatever its protocol. */
function offered(request: RecordedRequest): string[] {
  const body = JSON.stringify(request.body);
  return [...body.matchAll(/"name":"([^"]+)"/g)].map((m) => m[1] ?? "");
}

async function message(caller: TestCaller, sessionId: string, text: string): Promise<void> {
  await caller.ok("session", { action: "message", session_id: sessionId, message: text });
}

/** The agent CLI's own process (the runner's child in the session) as the host sees it. */
async function agentPid(projectId: string, sessionId: string): Promise<number> {
  const [listed] = await docker().listContainers({ filters: { label: [`oubliette.project=${projectId}`] } });
  const top = await docker()
    .getContainer(listed?.Id ?? "")
    .top();
  const column = top.Titles.indexOf("PID");
  const procs: { pid: number; ppid: number; session: string | undefined; runner: boolean }[] = [];
  for (const row of top.Processes as string[][]) {
    const pid = Number(row[column]);
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const env = readFileSync(`/proc/${pid}/environ`, "latin1");
      procs.push({
        pid,
        ppid: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]),
        session: /OUBLIETTE_SESSION_ID=([^\0]+)/.exec(env)?.[1],
        runner: env.includes("OUBLIETTE_RUNNER_TOKEN="),
      });
    } catch {
      // it ended meanwhile
    }
  }
  const runner = procs.find(
    (p) => p.runner && procs.some((c) => c.ppid === p.pid && c.session === sessionId),
  );
  const agent = procs.find((p) => p.session === sessionId && p.ppid === runner?.pid);
  if (!agent) throw new Error(`no agent process of ${sessionId}`);
  return agent.pid;
}

// OUBLIETTE_TEST_AGENTS=none builds no CLI image: then there is nothing here to run.
it.skipIf(runtimes.length > 0)("needs the agent CLIs' images (OUBLIETTE_TEST_AGENTS names none)", () => {});

describe.concurrent.each(runtimes)("the %s runtime", (runtime) => {
  let caller: TestCaller;
  let model: ModelLane;
  let projectId = "";
  let sessionId = "";

  beforeAll(async () => {
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, `lifetime-${runtime}`);
    model = fakeModel.lane(runtime);
  });

  // What an earlier test left scripted (one that failed midway) is not this test's.
  beforeEach(() => model.reset());

  afterAll(async () => {
    if (projectId !== "")
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    await caller?.close();
  });

  // One runtime's tests build on each other (one session, its turns): in order.
  describe("in order", { concurrent: false }, () => {
    it("offers the key's Oubliette tools in its first request; the model lists workspaces and sees them", async () => {
      const created = await caller.ok<{ project_id: string }>("project", {
        action: "create",
        name: `lifetime-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
        default_agent: runtime,
        default_model: MODELS[runtime],
      });
      projectId = created.project_id;
      const before = model.requests.length;
      const deferred = DEFERS_MCP_TOOLS.has(runtime);
      // Droid's search loads at most five tools a query: one query per tool the test looks for.
      if (deferred)
        model.script(
          ["oubliette_session", "oubliette_container", "oubliette_project", "ant_lookup"].map((tool) => ({
            text: "Let me find my tools.",
            tool: "ToolSearch",
            arguments: { query: `oubliette___${tool}` },
          })),
        );
      model.script([
        {
          text: "Let me look.",
          tool: "oubliette_workspace",
          arguments: { action: "list", project_id: projectId },
        },
        { text: "There is a default workspace." },
      ]);
      const spawned = await caller.ok<{ session_id: string }>("session", {
        action: "spawn",
        project_id: projectId,
        oubliette_access: "project",
        caller_id: "ant",
        caller_tools: [LOOKUP],
        prompt: "Which workspaces does this project have? First turn.",
      });
      sessionId = spawned.session_id;
      await completion(caller, sessionId, 1);
      const turn = mainRequests(model, before);
      expect(turn[0]).toBeDefined();
      // Everything the key allows, already in the first request (some CLIs never list again), or,
      // where the CLI defers MCP tools, found by the search the first request offers.
      const names = deferred
        ? [...new Set(turn.flatMap((request) => offered(request)))]
        : offered(turn[0] as RecordedRequest);
      if (deferred) expect(offered(turn[0] as RecordedRequest)).toContain("ToolSearch");
      for (const tool of ["workspace", "session", "container", "project"])
        expect(
          names.some((n) => n.endsWith(`oubliette_${tool}`)),
          `oubliette_${tool} in ${names.join(", ")}`,
        ).toBe(true);
      expect(names.some((n) => n.endsWith("ant_lookup"))).toBe(true);
      // The model saw the answer of its call: the project's workspaces.
      expect(
        model
          .toolResults()
          .map((r) => r.text)
          .join("\n"),
      ).toMatch(/"workspace_id":\s*"default"/);
      expect(model.requests.slice(before).filter((r) => r.refused)).toEqual([]);
    }, 300_000);

    it("continues the same conversation with a second and a third message", async () => {
      for (const [seq, text] of [
        [2, "Second turn: say something."],
        [3, "Third turn: and again."],
      ] as const) {
        const before = model.requests.length;
        model.script([{ text: `Answer to turn ${seq}.` }]);
        await message(caller, sessionId, text);
        await completion(caller, sessionId, seq);
        const latest = mainRequests(model, before).at(-1);
        const body = JSON.stringify(latest?.body);
        expect(body).toContain(text);
        // The earlier turns are in the conversation the model is sent.
        expect(body).toContain("First turn.");
        if (seq === 3) expect(body).toContain("Second turn");
      }
    }, 300_000);

    it("still delivers a caller's answer that comes while the host-agent is killed and restarted", async () => {
      const before = model.requests.length;
      model.script([
        { text: "Asking the caller.", tool: "ant_lookup", arguments: { word: "oubliette" } },
        { text: "Got it." },
      ]);
      caller.answerWith(() => "ignore");
      let request: SessionEvent;
      try {
        await message(caller, sessionId, "Look up oubliette (fourth turn).");
        request = await caller.waitFor(
          (e) => e.session_id === sessionId && e.type === "caller_tool_request",
          120_000,
          "the caller tool request",
        );
      } catch (err) {
        // This runtime will not have an answer pending: the others need not wait for it.
        hostRestart.withdraw();
        throw err;
      }
      await hostRestart.arrive();
      if (request.type !== "caller_tool_request") throw new Error("not a request");
      const answered = await caller.respond(sessionId, request.request_id, {
        result: "a dungeon with a trapdoor",
      });
      expect(answered.isError).toBeFalsy();
      await completion(caller, sessionId, 4);
      expect(
        model
          .toolResults()
          .map((r) => r.text)
          .join("\n"),
      ).toContain("a dungeon with a trapdoor");
      expect(mainRequests(model, before).length).toBeGreaterThanOrEqual(2);
    }, 300_000);

    it("restarts its agent killed between turns, in the same conversation, and says so", async () => {
      const pid = await agentPid(projectId, sessionId);
      process.kill(pid, "SIGKILL");
      const restarted = await caller.waitFor(
        (e) => e.session_id === sessionId && e.type === "agent_restarted",
        60_000,
        "agent_restarted",
      );
      expect(restarted).toMatchObject({ signal: "SIGKILL", resumed: true, restarts: 1 });
      const before = model.requests.length;
      model.script([{ text: "Back, and I remember." }]);
      await message(caller, sessionId, "Fifth turn, after the restart.");
      await completion(caller, sessionId, 5, 180_000);
      const body = JSON.stringify(mainRequests(model, before).at(-1)?.body);
      expect(body).toContain("Fifth turn, after the restart.");
      expect(body).toContain("First turn.");
      expect(
        await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId }),
      ).toMatchObject({
        status: "running",
      });
    }, 300_000);

    it("fails the session, saying why, when its agent keeps dying", async () => {
      const over = () => caller.events.some((e) => e.session_id === sessionId && e.type === "session_ended");
      const restarts = () =>
        caller.events.filter((e) => e.session_id === sessionId && e.type === "agent_restarted").length;
      // Killed again each time it is back, it passes the limit (4 deaths in 2 minutes) within a few.
      for (let kill = 0; kill < 6 && !over(); kill += 1) {
        const seen = restarts();
        process.kill(await waitForNewAgent(projectId, sessionId), "SIGKILL");
        const deadline = Date.now() + 60_000;
        while (restarts() === seen && !over() && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 200));
      }
      const ended = await caller.waitFor(
        (e) => e.session_id === sessionId && e.type === "session_ended",
        120_000,
        "the session's end",
      );
      expect(ended.type === "session_ended" ? ended.reason : "").toMatch(
        /unexpected end within .* it is not started again/,
      );
      expect(
        await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId }),
      ).toMatchObject({
        status: "failed",
      });
    }, 300_000);
  });
});

/** The agent's process once the runner has started it (again). */
async function waitForNewAgent(projectId: string, sessionId: string): Promise<number> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await agentPid(projectId, sessionId);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
