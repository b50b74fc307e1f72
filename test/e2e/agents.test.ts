/**
 * Real agent CLIs end to end: the official MCP SDK client as the caller, the Worker under
 * wrangler dev, a Docker host-agent, each runtime's pinned CLI in its image with no network, and
 * a scripted fake model on loopback behind the host-agent's model proxy. For each runtime: the
 * model calls the caller's tool, the caller answers, the model sees the answer, the turn
 * completes; a second and a third message continue the same conversation; a shell command runs in
 * the image; a caller's answer that takes 30 s still reaches the model; an interrupt keeps the
 * session; failing side requests (titles, checks) do not end a session. The model only ever sees
 * the host's key; the container holds none; the proxy refuses what is not a model API; a budget
 * stops the model. Each CLI's own shell installs a package with npm from a registry on this
 * machine, reached by name through the host's egress gate (the project's allowlist names it).
 *
 * The five runtimes run at once, each with its own caller and its own lane of the fake model (the
 * CLI's requests, told apart by their user agent); each runtime's tests run in order.
 */

import { type Dirent, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import { ContainerPaths, modelSocketPath } from "../../protocol/container-layout.js";
import type { SessionEvent } from "../../protocol/events.js";
import { type FakeModel, type ModelLane, startFakeModel } from "../fixtures/fake-model/index.js";
import { FIXTURE, type NpmRegistry, startNpmRegistry } from "../fixtures/npm-registry/index.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { containerProcesses, envValue, execAs, projectContainer } from "../support/docker-exec.js";
import { TestStack } from "../support/stack.js";
import { runtimeOfRequest } from "./agent-cli.js";
import { failureReport } from "./agent-failure-report.js";

const HOST_KEY = "sk-oubliette-e2e-host-key-0123456789abcdef";
const LOOKUP = {
  name: "lookup",
  description: "Look a word up in the caller's dictionary.",
  inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
};
const MODELS: Partial<Record<AgentRuntime, string>> = {
  claude: "claude-sonnet-4-5",
  droid: "claude-sonnet-4-5",
  codex: "gpt-5",
  opencode: "gpt-5",
  gemini: "gemini-2.5-pro",
};

/**
 * A call of each CLI's own shell tool, as its model would make it. The command prints what its
 * text does not hold, so a tool result holding SHELL_OUTPUT proves the command ran.
 */
// No command substitution: Gemini CLI blocks `$(…)` and backticks as command injection.
const SHELL_COMMAND = "printf 'shell-%d\\n' 42";
const SHELL_OUTPUT = "shell-42";
const SHELL_CALLS: Partial<Record<AgentRuntime, { tool: string; arguments: Record<string, unknown> }>> = {
  claude: { tool: "Bash", arguments: { command: SHELL_COMMAND, description: "Print a number" } },
  droid: {
    tool: "Execute",
    arguments: {
      command: SHELL_COMMAND,
      summary: "Print a small number",
      riskLevel: "low",
      riskLevelReason: "It only prints text.",
    },
  },
  codex: { tool: "exec_command", arguments: { cmd: SHELL_COMMAND } },
  opencode: { tool: "bash", arguments: { command: SHELL_COMMAND } },
  gemini: { tool: "run_shell_command", arguments: { command: SHELL_COMMAND } },
};

/** The same call of each CLI's shell tool, running `command`. */
function shellCall(runtime: AgentRuntime, command: string) {
  const call = SHELL_CALLS[runtime];
  if (!call) return undefined;
  const key = "cmd" in call.arguments ? "cmd" : "command";
  return { tool: call.tool, arguments: { ...call.arguments, [key]: command } };
}

/** The fixture registry's name, which the host's gate maps to this machine's loopback (its test flag). */
const REGISTRY = "registry.oubliette.test";

const images = dockerContext().agentImages ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");
const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });

let stack: TestStack;
/** The caller of the suites that run after the runtimes' (the scripted droid, the budget). */
let caller: TestCaller;
let fakeModel: FakeModel;
let registry: NpmRegistry;

beforeAll(async () => {
  fakeModel = await startFakeModel({ laneOf: runtimeOfRequest });
  const model = fakeModel;
  registry = await startNpmRegistry();
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: {
      OUBLIETTE_EGRESS_TEST_RESOLVE: `${REGISTRY}=127.0.0.1`,
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
  await fakeModel?.close();
  await registry?.close();
});

function of(caller: TestCaller, sessionId: string, type: SessionEvent["type"]) {
  return caller.events.filter((e) => e.session_id === sessionId && e.type === type);
}

/** Files under `dir` (smaller than 4 MB, not under proc, sys, dev or the CLIs' own files) holding `text`. */
function filesHolding(dir: string, text: string, depth = 0): string[] {
  if (depth > 12) return [];
  const found: string[] = [];
  let entries: Dirent[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (depth === 0 && ["proc", "sys", "dev"].includes(entry.name)) continue;
    if (path.endsWith("/opt/agents")) continue;
    if (entry.isDirectory()) found.push(...filesHolding(path, text, depth + 1));
    else if (entry.isFile()) {
      try {
        if (statSync(path).size < 4e6 && readFileSync(path, "latin1").includes(text)) found.push(path);
      } catch {
        // gone meanwhile
      }
    }
  }
  return found;
}

/** The last main request's body as JSON text: what the model was given of the conversation. */
function lastMainRequest(model: ModelLane): string {
  return JSON.stringify(model.requests.findLast((r) => r.main)?.body ?? null);
}

async function status(caller: TestCaller, sessionId: string): Promise<string> {
  return (await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId })).status;
}

function completion(caller: TestCaller, sessionId: string, seq: number, timeoutMs = 120_000) {
  return caller.waitFor(
    (e) => e.session_id === sessionId && e.type === "completion" && e.message_seq === seq,
    timeoutMs,
    `the completion of turn ${seq}`,
  );
}

async function project(
  caller: TestCaller,
  runtime: AgentRuntime,
  registry: NpmRegistry,
  limits: Record<string, unknown> = {},
): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `agents-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
    default_agent: runtime,
    default_model: MODELS[runtime],
    limits,
    // The fixture registry, and nothing else, through the host's gate.
    network: { mode: "allowlist", allow: [`${REGISTRY}:${registry.port}`] },
  });
  return created.project_id;
}

async function exec(
  caller: TestCaller,
  projectId: string,
  script: string,
): Promise<{ exit_code: number; stdout: string }> {
  return caller.ok("container", { action: "exec", project_id: projectId, command: ["node", "-e", script] });
}

describe.concurrent.each(runtimes)("the %s runtime", (runtime) => {
  let caller: TestCaller;
  let model: ModelLane;
  /** This runtime's own registry: what it was asked is this runtime's installs alone. */
  let registry: NpmRegistry;
  let projectId = "";
  let sessionId = "";
  /** The seq of the session's last message. */
  let seq = 0;
  /** Sends the session's next message and waits for its turn to complete. */
  async function turn(message: string, timeoutMs = 120_000) {
    seq += 1;
    await caller.ok("session", { action: "message", session_id: sessionId, message });
    return completion(caller, sessionId, seq, timeoutMs);
  }

  beforeAll(async () => {
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, `agents-${runtime}`);
    model = fakeModel.lane(runtime);
    registry = await startNpmRegistry();
  });

  afterEach((context) => {
    if (context.task.result?.state === "fail")
      process.stderr.write(
        `${failureReport(
          `${runtime}, "${context.task.name}"`,
          model.requests,
          caller.events.filter((e) => e.session_id === sessionId),
        )}\n`,
      );
    // A step left over would answer the next test's turn: drop it, and say this test left one.
    const left = model.remaining;
    model.reset();
    expect(left, "scripted replies the CLI never asked for").toBe(0);
  });

  afterAll(async () => {
    if (projectId !== "")
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    await caller?.close();
    await registry?.close();
  });

  // One runtime's tests build on each other (one session, its turns): in order.
  describe("in order", { concurrent: false }, () => {
    it("relays the caller's tool through the real CLI: request, answer, the model sees it, the turn completes", async () => {
      const before = model.requests.length;
      model.script([
        { text: "Let me look that up.", tool: "ant_lookup", arguments: { word: "oubliette" } },
        { text: "It means a secret dungeon." },
      ]);
      caller.answerWith((request) =>
        request.tool === "lookup" ? { result: "a dungeon reached through a trapdoor" } : "ignore",
      );
      // Two agents run in this container at once (the side-request test starts a second): OpenCode
      // alone takes about 500 MiB, so the default 1024 MiB would leave its runner starved.
      projectId = await project(caller, runtime, registry, { memory_mb: 3072 });
      const spawned = await caller.ok<{ session_id: string; agent: string }>("session", {
        action: "spawn",
        project_id: projectId,
        caller_id: "ant",
        caller_tools: [LOOKUP],
        prompt: "What does oubliette mean? Use the lookup tool.",
      });
      sessionId = spawned.session_id;
      seq = 1;
      expect(spawned.agent).toBe(runtime);
      const request = await caller.waitFor(
        (e) => e.session_id === sessionId && e.type === "caller_tool_request",
        180_000,
        "the caller tool request",
      );
      expect(request).toMatchObject({ tool: "lookup", arguments: { word: "oubliette" } });
      await completion(caller, sessionId, 1, 120_000);
      // The model's next request carried the caller's answer.
      expect(
        model
          .toolResults(before)
          .map((r) => r.text)
          .join("\n"),
      ).toContain("a dungeon reached through a trapdoor");
      expect(of(caller, sessionId, "delta").length).toBeGreaterThan(0);
      expect(of(caller, sessionId, "message").map((e) => (e.type === "message" ? e.text : ""))).toContain(
        "It means a secret dungeon.",
      );
      expect(of(caller, sessionId, "tool_call").length).toBeGreaterThan(0);
      // Phone-home: the CLI runs with its switches off and no network, and nothing failed for it.
      expect(of(caller, sessionId, "error")).toEqual([]);
      // Every request the model got came with the host's key, never the session's placeholder.
      const mine = model.requests.slice(before);
      expect(mine.length).toBeGreaterThan(0);
      for (const r of mine) {
        const presented = [r.headers["x-api-key"], r.headers.authorization, r.headers["x-goog-api-key"]].join(
          " ",
        );
        expect(presented).toContain(HOST_KEY);
        expect(presented).not.toContain("oubm_");
        expect(r.path).not.toContain("oubm_");
      }
      const info = await caller.ok<{ usage: { requests: number; input_tokens: number } | null }>("session", {
        action: "get",
        session_id: sessionId,
      });
      expect(info.usage?.requests).toBeGreaterThan(0);
      expect(of(caller, sessionId, "usage").length).toBeGreaterThan(0);
    }, 300_000);

    it("continues the same conversation over a second and a third message", async () => {
      model.script([{ text: "Second answer, as asked." }]);
      expect(await turn("And once more, briefly.")).toMatchObject({ stop_reason: "end_turn" });
      expect(model.lastUserText()).toContain("And once more, briefly.");
      // The model was given the first turn with the second: one conversation, not a fresh one.
      const second = lastMainRequest(model);
      for (const earlier of ["What does oubliette mean?", "It means a secret dungeon."])
        expect(second).toContain(earlier);
      model.script([{ text: "Third answer, all in one thread." }]);
      expect(await turn("A third message, please.")).toMatchObject({ stop_reason: "end_turn" });
      expect(model.lastUserText()).toContain("A third message, please.");
      const third = lastMainRequest(model);
      for (const earlier of [
        "What does oubliette mean?",
        "It means a secret dungeon.",
        "And once more, briefly.",
        "Second answer, as asked.",
      ])
        expect(third).toContain(earlier);
      expect(await status(caller, sessionId)).toBe("running");
    }, 240_000);

    it("runs a command with the CLI's own shell tool in its image, and the session goes on", async () => {
      const call = SHELL_CALLS[runtime];
      expect(call, `a shell call for ${runtime} (SHELL_CALLS)`).toBeDefined();
      model.script([
        { text: "Running it.", ...(call as NonNullable<typeof call>) },
        { text: "The command ran." },
      ]);
      const before = model.requests.length;
      expect(await turn("Print six times seven with the shell.")).toMatchObject({ stop_reason: "end_turn" });
      expect(
        model
          .toolResults(before)
          .map((r) => r.text)
          .join("\n"),
      ).toContain(SHELL_OUTPUT);
      // The CLI is still there for the next message (a CLI that fell over on its shell ended here).
      model.script([{ text: "Still here after the shell." }]);
      expect(await turn("Are you still there after that?")).toMatchObject({ stop_reason: "end_turn" });
      expect(await status(caller, sessionId)).toBe("running");
    }, 240_000);

    // Concurrent suites: expect.poll needs this test's own expect.
    it("installs a package with npm through the host's gate, from the CLI's own shell", async ({
      expect,
    }) => {
      const install = `npm install --no-audit --no-fund --fetch-retries=0 --registry http://${REGISTRY}:${registry.port}/ ${FIXTURE.greeter}`;
      const call = shellCall(runtime, install);
      expect(call, `a shell call for ${runtime} (SHELL_CALLS)`).toBeDefined();
      model.script([
        { text: "Installing it.", ...(call as NonNullable<typeof call>) },
        { text: "Installed." },
      ]);
      const before = model.requests.length;
      const asked = registry.requests.length;
      expect(await turn("Install the greeter package with npm.", 180_000)).toMatchObject({
        stop_reason: "end_turn",
      });
      // The model was given npm's own account of the install.
      expect(
        model
          .toolResults(before)
          .map((r) => r.text)
          .join("\n"),
      ).toMatch(/added 2 packages/);
      // The package is in the workspace.
      const container = await projectContainer(docker(), projectId);
      const installed = await execAs(container, "0", [
        "cat",
        `/workspace/default/node_modules/${FIXTURE.greeter}/package.json`,
      ]);
      expect(JSON.parse(installed.out)).toMatchObject({ name: FIXTURE.greeter, version: "2.1.0" });
      // The registry was asked by its name: the requests came through the host's gate.
      const through = registry.requests.slice(asked);
      expect(through.length).toBeGreaterThanOrEqual(4);
      for (const r of through) expect(r.host).toBe(`${REGISTRY}:${registry.port}`);
      // And the bytes are counted on the session.
      await expect
        .poll(
          async () => {
            const info = await caller.ok<{ network: { hosts: { host: string; bytes_in: number }[] } }>(
              "session",
              {
                action: "get",
                session_id: sessionId,
              },
            );
            return info.network.hosts.find((h) => h.host === REGISTRY)?.bytes_in ?? 0;
          },
          { timeout: 15_000 },
        )
        .toBeGreaterThan(1_000);
    }, 240_000);

    it("waits 30 s for the caller's slow answer, which reaches the model, and the session goes on", async () => {
      const slowMs = 30_000;
      model.script([
        { text: "Looking it up, slowly.", tool: "ant_lookup", arguments: { word: "trapdoor" } },
        { text: "The slow answer arrived." },
      ]);
      let askedAt = 0;
      const before = model.requests.length;
      caller.answerWith(async (request) => {
        if (request.tool !== "lookup") return "ignore";
        askedAt = Date.now();
        await new Promise((resolve) => setTimeout(resolve, slowMs));
        return { result: "a door in a floor, answered after a long wait" };
      });
      expect(await turn("Look up trapdoor, please.", 240_000)).toMatchObject({ stop_reason: "end_turn" });
      expect(Date.now() - askedAt).toBeGreaterThanOrEqual(slowMs);
      expect(
        model
          .toolResults(before)
          .map((r) => r.text)
          .join("\n"),
      ).toContain("a door in a floor, answered after a long wait");
      model.script([{ text: "Here after the long wait." }]);
      expect(await turn("Still with me?")).toMatchObject({ stop_reason: "end_turn" });
      expect(await status(caller, sessionId)).toBe("running");
    }, 360_000);

    it("interrupts a slow turn and keeps the session for the next one", async () => {
      model.script([{ text: "This answer takes its time to arrive, word by word.", delay_ms: 60_000 }]);
      const deltasBefore = of(caller, sessionId, "delta").length;
      seq += 1;
      await caller.ok("session", { action: "message", session_id: sessionId, message: "Take your time." });
      await caller.waitFor(
        () => of(caller, sessionId, "delta").length > deltasBefore,
        60_000,
        "the slow turn's first delta",
      );
      const interrupted = await caller.ok<{ interrupt_sent: boolean }>("session", {
        action: "interrupt",
        session_id: sessionId,
      });
      expect(interrupted.interrupt_sent).toBe(true);
      const ended = await completion(caller, sessionId, seq, 60_000);
      expect(ended).toMatchObject({ stop_reason: "interrupted" });
      model.script([{ text: "Back after the interrupt." }]);
      await turn("Are you still there?");
      expect(await status(caller, sessionId)).toBe("running");
    }, 240_000);

    it("keeps a session whose side requests (titles, checks) the provider fails with HTTP 500", async () => {
      const sideBefore = model.requests.filter((r) => !r.main && r.protocol !== null).length;
      model.answerSideRequests({ error: { status: 500, message: "the provider failed this side request" } });
      try {
        model.script([{ text: "Answered despite the failing side requests." }]);
        const { session_id } = await caller.ok<{ session_id: string }>("session", {
          action: "spawn",
          project_id: projectId,
          new_session: true,
          prompt: "A first message whose title request fails.",
        });
        // A fresh agent, so that its first message's side requests (a title) are made, and fail.
        expect(session_id).not.toBe(sessionId);
        expect(await completion(caller, session_id, 1, 180_000)).toMatchObject({ stop_reason: "end_turn" });
        model.script([{ text: "And a second answer." }]);
        await caller.ok("session", { action: "message", session_id, message: "A second message." });
        expect(await completion(caller, session_id, 2, 180_000)).toMatchObject({ stop_reason: "end_turn" });
        expect(await status(caller, session_id)).toBe("running");
        const failed = model.requests.filter((r) => !r.main && r.protocol !== null).length - sideBefore;
        console.log(`side requests failed (${runtime}): ${failed}`);
      } finally {
        model.answerSideRequests(undefined);
      }
    }, 420_000);

    it("holds no key in the container, and the model socket refuses what is not a model API", async () => {
      const container = await projectContainer(docker(), projectId);
      // From the host, which sees past every uid in the container: each process's environment,
      // and every file of the container's view of the filesystem (agents' homes and workspaces too).
      const procs = await containerProcesses(container);
      expect(procs.filter((p) => p.env.join("\n").includes(HOST_KEY)).map((p) => p.pid)).toEqual([]);
      const root = `/proc/${(await container.inspect()).State.Pid}/root`;
      expect(filesHolding(root, HOST_KEY)).toEqual([]);
      // The agent's placeholder (from its environment, as the host reads it) opens only the model
      // APIs of the runner's model socket, asked as root in the container.
      const token = procs
        .map((p) => envValue(p, "OUBLIETTE_MODEL_KEY") ?? p.env.join("\n").match(/oubm_[0-9a-f]+/)?.[0])
        .find((t) => t?.startsWith("oubm_"));
      expect(token, "an agent's model placeholder").toBeDefined();
      const probe = (placeholder: string) => `
      const http = require("node:http");
      const ask = (path, auth) => new Promise((resolve) => {
        const headers = auth ? { "x-api-key": ${JSON.stringify(placeholder)}, authorization: "Bearer " + ${JSON.stringify(placeholder)} } : {};
        const req = http.request({ socketPath: ${JSON.stringify(modelSocketPath(ContainerPaths.socketDir))}, path, method: "POST", headers }, (res) => { res.resume(); resolve(res.statusCode); });
        req.on("error", (e) => resolve(e.code));
        req.end("{}");
      });
      Promise.all([ask("/v1/files", true), ask("/admin/keys", true), ask("/v1/messages", false)])
        .then((r) => console.log(JSON.stringify(r)));`;
      const asRoot = JSON.parse(
        (await execAs(container, "0", ["node", "-e", probe(token ?? "")])).out,
      ) as unknown[];
      expect(asRoot).toEqual([403, 403, 401]);
      // No network: loopback is the container's only interface and no route leads anywhere else, so
      // nothing leaves it but through the sockets the runner keeps (decided without sending a packet).
      const net = await execAs(container, "0", [
        "sh",
        "-c",
        "ls /sys/class/net; echo --; cat /proc/net/route",
      ]);
      const [interfaces, routes] = net.out.split("--\n");
      expect(interfaces?.trim().split(/\s+/)).toEqual(["lo"]);
      expect(routes?.trim().split("\n").slice(1)).toEqual([]);
      // `container exec` runs as the project's user: the runner's model socket does not even let it
      // connect, placeholder or not.
      const asExec = JSON.parse((await exec(caller, projectId, probe(token ?? ""))).stdout) as unknown[];
      expect(asExec.slice(0, 3)).toEqual(["EACCES", "EACCES", "EACCES"]);
    }, 120_000);
  });
});

describe("the scripted droid", () => {
  it("is interrupted mid-script: its turn completes as interrupted, the rest is skipped, the session goes on", async () => {
    const projectId = await project(caller, "scripted", registry);
    try {
      const { session_id } = await caller.ok<{ session_id: string }>("session", {
        action: "spawn",
        project_id: projectId,
      });
      await caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
      const slow = {
        id: "slow",
        steps: [
          { op: "print", data: "started" },
          { op: "sleep", ms: 60_000 },
          { op: "echo", text: "never" },
        ],
      };
      await caller.ok("session", { action: "message", session_id, message: JSON.stringify(slow) });
      // The turn is under way (an interrupt before the droid has the message has nothing to stop).
      await caller.waitForOutput(session_id, (d) => d.op === "print" && d.data === "started");
      await caller.ok("session", { action: "interrupt", session_id });
      expect(await completion(caller, session_id, 1, 30_000)).toMatchObject({ stop_reason: "interrupted" });
      await caller.runScript(session_id, { id: "after", steps: [{ op: "echo", text: "still here" }] });
      expect(caller.droidOutputs(session_id).map((d) => d.text)).toContain("still here");
      expect(caller.droidOutputs(session_id).map((d) => d.text)).not.toContain("never");
    } finally {
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 120_000);
});

describe("a model budget", () => {
  const runtime = runtimes.includes("claude") ? "claude" : runtimes[0];
  it.runIf(runtime !== undefined)(
    "stops the session's model traffic once max_cost_usd is spent, with an event saying why",
    async () => {
      const projectId = await project(caller, runtime as AgentRuntime, registry, { max_cost_usd: 0.000001 });
      // The budget's CLI asks its runtime's lane (the runtime's own suite is done by now).
      const model = fakeModel.lane(runtime as AgentRuntime);
      try {
        model.script([{ text: "A first answer costs more than the whole budget." }, { text: "Never sent." }]);
        const { session_id } = await caller.ok<{ session_id: string }>("session", {
          action: "spawn",
          project_id: projectId,
          prompt: "Say something.",
        });
        await completion(caller, session_id, 1, 120_000);
        const before = model.requests.length;
        await caller.ok("session", { action: "message", session_id, message: "And again." });
        const refused = await caller.waitFor(
          (e) => e.session_id === session_id && e.type === "error" && e.message.includes("budget is spent"),
          120_000,
          "the budget error",
        );
        expect(refused).toMatchObject({ message: expect.stringContaining("max_cost_usd") });
        // Nothing more reached the model for this session.
        expect(model.requests.slice(before).filter((r) => r.main)).toEqual([]);
      } finally {
        await caller.call("project", { action: "delete", project_id: projectId, force: true });
      }
    },
    300_000,
  );
});
