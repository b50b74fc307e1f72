/**
 * Real agent CLIs end to end: the official MCP SDK client as the caller, the Worker under
 * wrangler dev, a Docker host-agent, each runtime's pinned CLI in its image with no network, and
 * a scripted fake model on loopback behind the host-agent's model proxy. For each runtime: the
 * model calls the caller's tool, the caller answers, the model sees the answer, the turn
 * completes; a follow-up turn; an interrupt that keeps the session. The model only ever sees the
 * host's key; the container holds none; the proxy refuses what is not a model API; a budget stops
 * the model.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import type { SessionEvent } from "../../protocol/events.js";
import { type FakeModel, startFakeModel } from "../fixtures/fake-model/index.js";
import { TestCaller } from "../support/caller.js";
import { TestStack } from "../support/stack.js";

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

const images = inject("agentImages") ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");

let stack: TestStack;
let caller: TestCaller;
let model: FakeModel;

beforeAll(async () => {
  model = await startFakeModel();
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: inject("droidImage"),
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

function of(sessionId: string, type: SessionEvent["type"]) {
  return caller.events.filter((e) => e.session_id === sessionId && e.type === type);
}

function completion(sessionId: string, seq: number, timeoutMs = 120_000) {
  return caller.waitFor(
    (e) => e.session_id === sessionId && e.type === "completion" && e.message_seq === seq,
    timeoutMs,
    `the completion of turn ${seq}`,
  );
}

async function project(runtime: AgentRuntime, limits: Record<string, unknown> = {}): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `agents-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
    default_agent: runtime,
    default_model: MODELS[runtime],
    limits,
  });
  return created.project_id;
}

async function exec(projectId: string, script: string): Promise<{ exit_code: number; stdout: string }> {
  return caller.ok("container", { action: "exec", project_id: projectId, command: ["node", "-e", script] });
}

describe.each(runtimes)("the %s runtime", (runtime) => {
  let projectId = "";
  let sessionId = "";

  afterAll(async () => {
    if (projectId !== "")
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
  });

  it("relays the caller's tool through the real CLI: request, answer, the model sees it, the turn completes", async () => {
    const before = model.requests.length;
    model.script([
      { text: "Let me look that up.", tool: "ant_lookup", arguments: { word: "oubliette" } },
      { text: "It means a secret dungeon." },
    ]);
    caller.answerWith((request) =>
      request.tool === "lookup" ? { result: "a dungeon reached through a trapdoor" } : "ignore",
    );
    projectId = await project(runtime);
    const spawned = await caller.ok<{ session_id: string; agent: string }>("session", {
      action: "spawn",
      project_id: projectId,
      caller_id: "ant",
      caller_tools: [LOOKUP],
      prompt: "What does oubliette mean? Use the lookup tool.",
    });
    sessionId = spawned.session_id;
    expect(spawned.agent).toBe(runtime);
    const request = await caller.waitFor(
      (e) => e.session_id === sessionId && e.type === "caller_tool_request",
      180_000,
      "the caller tool request",
    );
    expect(request).toMatchObject({ tool: "lookup", arguments: { word: "oubliette" } });
    await completion(sessionId, 1, 120_000);
    // The model's next request carried the caller's answer.
    expect(
      model
        .toolResults()
        .map((r) => r.text)
        .join("\n"),
    ).toContain("a dungeon reached through a trapdoor");
    expect(of(sessionId, "delta").length).toBeGreaterThan(0);
    expect(of(sessionId, "message").map((e) => (e.type === "message" ? e.text : ""))).toContain(
      "It means a secret dungeon.",
    );
    expect(of(sessionId, "tool_call").length).toBeGreaterThan(0);
    // Phone-home: the CLI runs with its switches off and no network, and nothing failed for it.
    expect(of(sessionId, "error")).toEqual([]);
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
    expect(of(sessionId, "usage").length).toBeGreaterThan(0);
  }, 300_000);

  it("takes a follow-up message as a second turn", async () => {
    model.script([{ text: "Second answer, as asked." }]);
    await caller.ok("session", {
      action: "message",
      session_id: sessionId,
      message: "And once more, briefly.",
    });
    await completion(sessionId, 2);
    expect(model.lastUserText()).toContain("And once more, briefly.");
  }, 180_000);

  it("interrupts a slow turn and keeps the session for the next one", async () => {
    model.script([{ text: "This answer takes its time to arrive, word by word.", delay_ms: 60_000 }]);
    const deltasBefore = of(sessionId, "delta").length;
    await caller.ok("session", { action: "message", session_id: sessionId, message: "Take your time." });
    await caller.waitFor(
      () => of(sessionId, "delta").length > deltasBefore,
      60_000,
      "the slow turn's first delta",
    );
    const interrupted = await caller.ok<{ interrupt_sent: boolean }>("session", {
      action: "interrupt",
      session_id: sessionId,
    });
    expect(interrupted.interrupt_sent).toBe(true);
    const ended = await completion(sessionId, 3, 60_000);
    expect(ended).toMatchObject({ stop_reason: "interrupted" });
    model.script([{ text: "Back after the interrupt." }]);
    await caller.ok("session", { action: "message", session_id: sessionId, message: "Are you still there?" });
    await completion(sessionId, 4);
    expect(
      (await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId })).status,
    ).toBe("running");
  }, 240_000);

  it("holds no key in the container, and the model socket refuses what is not a model API", async () => {
    const scan = await exec(
      projectId,
      `
      const fs = require("node:fs"), path = require("node:path");
      const key = ${JSON.stringify(HOST_KEY)};
      let found = [];
      for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) {
        try { if (fs.readFileSync("/proc/" + pid + "/environ", "latin1").includes(key)) found.push("env of " + pid); } catch {}
      }
      const walk = (dir, depth) => {
        if (depth > 12 || ["/proc", "/sys", "/dev", "/opt/agents"].includes(dir)) return;
        let entries = [];
        try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
        for (const e of entries) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) walk(p, depth + 1);
          else if (e.isFile()) { try { if (fs.statSync(p).size < 4e6 && fs.readFileSync(p, "latin1").includes(key)) found.push(p); } catch {} }
        }
      };
      walk("/", 0);
      console.log(JSON.stringify(found));`,
    );
    expect(JSON.parse(scan.stdout)).toEqual([]);
    // The agent's placeholder, from its environment, opens only the model APIs.
    const probe = await exec(
      projectId,
      `
      const fs = require("node:fs"), http = require("node:http");
      let token = "";
      for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) {
        try { const m = /oubm_[0-9a-f]+/.exec(fs.readFileSync("/proc/" + pid + "/environ", "latin1")); if (m) token = m[0]; } catch {}
      }
      const ask = (path) => new Promise((resolve) => {
        const req = http.request({ socketPath: "/mcp/model.sock", path, method: "POST", headers: { "x-api-key": token, authorization: "Bearer " + token } }, (res) => { res.resume(); resolve(res.statusCode); });
        req.on("error", (e) => resolve(e.message));
        req.end("{}");
      });
      const outside = new Promise((resolve) => {
        const req = http.request({ host: "203.0.113.7", port: 80, path: "/", timeout: 3000 }, () => resolve("connected"));
        req.on("error", (e) => resolve(e.code));
        req.on("timeout", () => { req.destroy(); resolve("timeout"); });
        req.end();
      });
      Promise.all([ask("/v1/files"), ask("/admin/keys"), outside]).then((r) => console.log(JSON.stringify({ token: token !== "", r })));`,
    );
    const { token, r } = JSON.parse(probe.stdout) as { token: boolean; r: (number | string)[] };
    // Under workspace isolation the agent's /proc is not readable; here it is the same user.
    if (token) expect(r.slice(0, 2)).toEqual([403, 403]);
    else expect(r.slice(0, 2)).toEqual([401, 401]);
    // No network: nothing leaves the container but through the model socket.
    expect(["ENETUNREACH", "EHOSTUNREACH", "EAI_AGAIN", "ECONNREFUSED"]).toContain(r[2]);
  }, 120_000);
});

describe("the scripted droid", () => {
  it("is interrupted mid-script: its turn completes as interrupted, the rest is skipped, the session goes on", async () => {
    const projectId = await project("scripted");
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
      expect(await completion(session_id, 1, 30_000)).toMatchObject({ stop_reason: "interrupted" });
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
      const projectId = await project(runtime as AgentRuntime, { max_cost_usd: 0.000001 });
      try {
        model.script([{ text: "A first answer costs more than the whole budget." }, { text: "Never sent." }]);
        const { session_id } = await caller.ok<{ session_id: string }>("session", {
          action: "spawn",
          project_id: projectId,
          prompt: "Say something.",
        });
        await completion(session_id, 1, 120_000);
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
