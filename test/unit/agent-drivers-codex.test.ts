import { beforeAll, describe, expect, it } from "vitest";
import { codexDriver } from "../../container-client/src/agents/codex.js";
import type { AgentDriver } from "../../container-client/src/agents/driver.js";
import { stringifyToml, tomlString } from "../../container-client/src/agents/toml.js";
import type { AgentEventBody } from "../../protocol/agent-events.js";
import {
  deltasPerTurn,
  eventOrder,
  eventsOf,
  loadStream,
  parsed,
  replay,
  testContext,
} from "../support/agent-streams.js";

const RECORDING = "codex-app-server-multiturn-interrupt.events.jsonl";
const MESSAGES = ["Please CALL_TOOL echo", "Now a SLOW answer", "after the interrupt"];

const context = () => testContext({ runtime: "codex", model: "gpt-5", command: ["/opt/agents/codex/codex"] });

/** Codex's report that the MCP server `name` started (or did not). */
const serverStatus = (name: string, status: "starting" | "ready" | "failed", error?: string) =>
  JSON.stringify({
    method: "mcpServer/startupStatus/updated",
    params: { threadId: "thr_1", name, status, error: error ?? null },
  });

/** The recorder named itself differently in `initialize`; the rest of each line must match. */
const withoutClientInfo = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value).replace(/"clientInfo":\{[^}]*\}/, '"clientInfo":{}'));

/** Runs the handshake with made-up answers; returns what the driver wrote along the way. */
function handshake(driver: AgentDriver): string[] {
  const [initialize] = driver.start();
  const afterInit = driver.read(
    JSON.stringify({ id: JSON.parse(initialize as string).id, result: {} }),
  ).write;
  const threadStart = JSON.parse(afterInit[1] as string) as { id: number };
  const ready = driver.read(JSON.stringify({ id: threadStart.id, result: { thread: { id: "thr_1" } } }));
  return [...ready.write, ...driver.read(serverStatus("oubliette", "ready")).write];
}

const line = (value: unknown) => JSON.stringify(value);

describe("codex driver, replaying a recorded app-server session", () => {
  // The recording's MCP server is `echo`; its first turn went out before `echo` was ready, which
  // the driver now waits for.
  const recorded = () =>
    replay(
      codexDriver({ ...context(), mcpServer: { ...context().mcpServer, name: "echo" } }),
      loadStream(RECORDING),
      {
        messages: MESSAGES,
        interruptMethod: "turn/interrupt",
        normalise: withoutClientInfo,
        held: (sent) => (JSON.parse(sent) as { method?: string }).method === "turn/start",
      },
    );
  let events: AgentEventBody[] = [];
  beforeAll(() => {
    events = recorded().events;
  });

  it("writes the recorded handshake, turns and interrupt, each when the recording did", () => {
    // replay() compared every line written with the recorded one; nothing more was written.
    expect(recorded().extra).toEqual([]);
  });

  it("streams deltas and whole messages per turn", () => {
    expect(deltasPerTurn(events)).toEqual([
      "Calling the tool.TOOL RESULT WAS: Wall time: 0.0203 seconds\nOutput:echo: ping from fake model. Done.",
      "FAKE ",
      "FAKE REPLY 2: after the interrupt",
    ]);
    expect(eventsOf(events, "message").map((m) => m.text)).toEqual([
      "Calling the tool.",
      "TOOL RESULT WAS: Wall time: 0.0203 seconds\nOutput:echo: ping from fake model. Done.",
      "FAKE REPLY 2: after the interrupt",
    ]);
  });

  it("maps the MCP tool call and its result", () => {
    expect(eventsOf(events, "tool_call")).toEqual([
      { call_id: "call_1795312711188", name: "mcp__echo__echo", input: { text: "ping from fake model" } },
    ]);
    expect(eventsOf(events, "tool_result")).toEqual([
      { call_id: "call_1795312711188", output: "echo: ping from fake model", is_error: false },
    ]);
  });

  it("ends each turn with its message's seq, the interrupted one as interrupted", () => {
    expect(eventsOf(events, "completion")).toEqual([
      { message_seq: 1, stop_reason: "end_turn" },
      { message_seq: 2, stop_reason: "interrupted" },
      { message_seq: 3, stop_reason: "end_turn" },
    ]);
    expect(eventOrder(events)).toEqual([
      "message",
      "tool_call",
      "tool_result",
      "message",
      "completion",
      "completion",
      "message",
      "completion",
    ]);
  });

  it("reports the thread and Codex's warnings as system events", () => {
    expect(events[1]).toEqual({
      type: "system",
      subtype: "init",
      data: { thread_id: "01a200f9-f39b-75a2-a4e2-9543933c6c5e", model: "fake-resp" },
    });
    const warnings = eventsOf(events, "system").filter((e) => e.subtype === "warning");
    expect(warnings[0]?.message).toMatch(/bubblewrap/);
  });
});

describe("codex driver", () => {
  it("starts no turn until Codex has started Oubliette's MCP server, or given up on it", () => {
    for (const outcome of ["ready", "failed"] as const) {
      const driver = codexDriver(context());
      const [initialize] = driver.start();
      const thread = driver.read(line({ id: JSON.parse(initialize as string).id, result: {} })).write[1];
      expect(driver.send(1, "first")).toEqual([]);
      const started = driver.read(
        line({ id: JSON.parse(thread as string).id, result: { thread: { id: "thr_1" } } }),
      );
      expect(started.write, "the thread exists, the server does not yet").toEqual([]);
      expect(driver.read(serverStatus("oubliette", "starting")).write).toEqual([]);
      // Another server of the agent's own settling changes nothing.
      expect(driver.read(serverStatus("other", "ready")).write).toEqual([]);
      const settled = driver.read(
        serverStatus("oubliette", outcome, outcome === "failed" ? "timed out" : undefined),
      );
      expect(parsed(settled.write).map((m) => m.method)).toEqual(["turn/start"]);
      if (outcome === "failed")
        expect(settled.events).toEqual([
          { type: "error", message: "MCP server oubliette failed to start: timed out" },
        ]);
      // Said again, it starts nothing more.
      expect(driver.read(serverStatus("oubliette", "ready")).write).toEqual([]);
    }
  });

  it("starts the first turn when the server was ready before the thread answered", () => {
    const driver = codexDriver(context());
    const [initialize] = driver.start();
    const thread = driver.read(line({ id: JSON.parse(initialize as string).id, result: {} })).write[1];
    driver.send(1, "first");
    expect(driver.read(serverStatus("oubliette", "ready")).write).toEqual([]);
    const started = driver.read(
      line({ id: JSON.parse(thread as string).id, result: { thread: { id: "thr_1" } } }),
    );
    expect(parsed(started.write).map((m) => m.method)).toEqual(["turn/start"]);
  });

  it("holds messages until the thread exists, then sends one turn at a time", () => {
    const driver = codexDriver(context());
    expect(driver.send(1, "first")).toEqual([]);
    expect(driver.send(2, "second")).toEqual([]);
    const [first] = parsed(handshake(driver));
    expect(first).toMatchObject({
      method: "turn/start",
      params: { threadId: "thr_1", input: [{ type: "text", text: "first" }] },
    });
    expect(first).not.toHaveProperty("jsonrpc");
    const done = driver.read(
      line({ method: "turn/completed", params: { turn: { id: "t1", status: "completed" } } }),
    );
    expect(done.events).toEqual([{ type: "completion", message_seq: 1, stop_reason: "end_turn" }]);
    expect(parsed(done.write)[0]).toMatchObject({
      method: "turn/start",
      params: { input: [{ text: "second" }] },
    });
  });

  it("sends an interrupt that came before the turn's id once Codex names the turn", () => {
    const driver = codexDriver(context());
    handshake(driver);
    const [turnStart] = parsed(driver.send(1, "go"));
    expect(driver.interrupt()).toEqual([]);
    const named = driver.read(line({ id: turnStart?.id, result: { turn: { id: "turn_9" } } }));
    expect(parsed(named.write)).toMatchObject([
      { method: "turn/interrupt", params: { threadId: "thr_1", turnId: "turn_9" } },
    ]);
    // And straight away once it is known.
    expect(parsed(driver.interrupt())).toMatchObject([{ method: "turn/interrupt" }]);
  });

  it("writes no interrupt when no turn is in flight", () => {
    const driver = codexDriver(context());
    handshake(driver);
    expect(driver.interrupt()).toEqual([]);
  });

  it("ends a failed turn in error and goes on with the next message", () => {
    const driver = codexDriver(context());
    handshake(driver);
    const [turnStart] = parsed(driver.send(1, "one"));
    driver.send(2, "two");
    const refused = driver.read(line({ id: turnStart?.id, error: { code: -32600, message: "busy" } }));
    expect(refused.events).toEqual([
      { type: "error", message: "turn/start failed: busy" },
      { type: "completion", message_seq: 1, stop_reason: "error" },
    ]);
    expect(parsed(refused.write)).toMatchObject([
      { method: "turn/start", params: { input: [{ text: "two" }] } },
    ]);
    const failed = driver.read(
      line({
        method: "turn/completed",
        params: { turn: { id: "t2", status: "failed", error: { message: "model unreachable" } } },
      }),
    );
    expect(failed.events).toEqual([
      { type: "error", message: "model unreachable" },
      { type: "completion", message_seq: 2, stop_reason: "error" },
    ]);
  });

  it("ends every waiting message in error when the thread cannot start", () => {
    const driver = codexDriver(context());
    const [initialize] = driver.start();
    driver.send(1, "one");
    driver.send(2, "two");
    const init = driver.read(line({ id: JSON.parse(initialize as string).id, result: {} }));
    const threadStart = JSON.parse(init.write[1] as string) as { id: number };
    const out = driver.read(line({ id: threadStart.id, error: { code: -32000, message: "no config" } }));
    expect(out.events).toEqual([
      { type: "error", message: "thread/start failed: no config" },
      { type: "completion", message_seq: 1, stop_reason: "error" },
      { type: "completion", message_seq: 2, stop_reason: "error" },
    ]);
  });

  it("maps errors: final ones as errors, retried ones as system events", () => {
    const driver = codexDriver(context());
    expect(driver.read(line({ method: "error", params: { error: { message: "quota" } } })).events).toEqual([
      { type: "error", message: "quota" },
    ]);
    const retry = driver.read(
      line({ method: "error", params: { error: { message: "503" }, willRetry: true } }),
    );
    expect(retry.events).toEqual([{ type: "system", subtype: "retry", message: "503" }]);
    const mcp = driver.read(
      line({
        method: "mcpServer/startupStatus/updated",
        params: { name: "oubliette", status: "failed", error: "ENOENT" },
      }),
    );
    expect(mcp.events).toEqual([{ type: "error", message: "MCP server oubliette failed to start: ENOENT" }]);
  });

  it("relays a line that is not JSON-RPC as droid output", () => {
    expect(codexDriver(context()).read("panic: oops").events).toEqual([
      { type: "droid_output", text: "panic: oops" },
    ]);
  });

  describe("answers Codex's requests at once", () => {
    const cases: { method: string; params: unknown; result: unknown; granted: boolean }[] = [
      {
        method: "item/commandExecution/requestApproval",
        params: { threadId: "thr_1", turnId: "t", itemId: "i", command: "rm -rf build" },
        result: { decision: "accept" },
        granted: true,
      },
      {
        method: "item/fileChange/requestApproval",
        params: { threadId: "thr_1", turnId: "t", itemId: "i" },
        result: { decision: "accept" },
        granted: true,
      },
      { method: "execCommandApproval", params: {}, result: { decision: "approved" }, granted: true },
      { method: "applyPatchApproval", params: {}, result: { decision: "approved" }, granted: true },
      {
        method: "item/permissions/requestApproval",
        params: { permissions: { fileSystem: { write: ["/workspace/default"] } } },
        result: { permissions: { fileSystem: { write: ["/workspace/default"] } }, scope: "turn" },
        granted: true,
      },
      {
        method: "mcpServer/elicitation/request",
        params: { serverName: "oubliette", mode: "form", _meta: { codex_approval_kind: "mcp_tool_call" } },
        result: { action: "accept", content: {}, _meta: null },
        granted: true,
      },
      {
        method: "mcpServer/elicitation/request",
        params: { serverName: "oubliette", mode: "form", message: "Your name?", requestedSchema: {} },
        result: { action: "decline", content: null, _meta: null },
        granted: false,
      },
      {
        method: "item/tool/requestUserInput",
        params: { questions: [{ id: "q" }] },
        result: { answers: {} },
        granted: false,
      },
    ];
    it.each(cases)("$method", ({ method, params, result, granted }) => {
      const out = codexDriver(context()).read(line({ id: 0, method, params }));
      expect(parsed(out.write)).toEqual([{ id: 0, result }]);
      expect(out.events).toEqual([
        { type: "system", subtype: "auto_answer", message: expect.any(String), data: { method, granted } },
      ]);
    });

    it("refuses a request it does not know, so Codex never waits", () => {
      const out = codexDriver(context()).read(
        line({ id: "r7", method: "account/chatgptAuthTokens/refresh" }),
      );
      expect(parsed(out.write)).toEqual([{ id: "r7", error: { code: -32601, message: expect.any(String) } }]);
      expect(out.events[0]).toMatchObject({ type: "system", data: { granted: false } });
    });
  });
});

/**
 * Reads the TOML this writer emits: `[a.b]` headers, `key = value` lines whose values (basic
 * strings, arrays, booleans, integers) are also JSON. Enough to check a config, not a TOML parser.
 */
function readToml(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let table = root;
  const key = (k: string) => (k.startsWith('"') ? (JSON.parse(k) as string) : k);
  for (const raw of text.split("\n")) {
    if (raw.trim() === "") continue;
    const header = /^\[(.+)\]$/.exec(raw);
    if (header) {
      table = root;
      for (const part of (header[1] as string).match(/"(?:[^"\\]|\\.)*"|[A-Za-z0-9_-]+/g) ?? []) {
        table[key(part)] ??= {};
        table = table[key(part)] as Record<string, unknown>;
      }
      continue;
    }
    const entry = /^("(?:[^"\\]|\\.)*"|[A-Za-z0-9_-]+) = (.*)$/.exec(raw);
    if (!entry) throw new Error(`not TOML this writer emits: ${raw}`);
    table[key(entry[1] as string)] = JSON.parse(entry[2] as string);
  }
  return root;
}

describe("codex launch", () => {
  const ctx = context();
  const launch = codexDriver(ctx).launch();

  it("runs the app-server with its own CODEX_HOME and only the placeholder credential", () => {
    expect(launch.argv).toEqual(["/opt/agents/codex/codex", "app-server"]);
    expect(launch.env).toEqual({
      CODEX_HOME: "/home/agents/ses_test/.codex",
      OUBLIETTE_MODEL_TOKEN: ctx.modelToken,
    });
    expect(launch.files.map((f) => f.path)).toEqual(["/home/agents/ses_test/.codex/config.toml"]);
  });

  it("writes a config.toml that points at the model forwarder and the oubliette MCP server", () => {
    const config = readToml(launch.files[0]?.content ?? "");
    expect(config).toEqual({
      model: "gpt-5",
      model_provider: "oubliette",
      approval_policy: "never",
      sandbox_mode: "danger-full-access",
      check_for_update_on_startup: false,
      web_search: "disabled",
      model_providers: {
        oubliette: {
          name: "Oubliette model forwarder",
          base_url: "http://127.0.0.1:43210/v1",
          env_key: "OUBLIETTE_MODEL_TOKEN",
          wire_api: "responses",
        },
      },
      analytics: { enabled: false },
      features: { plugins: false, apps: false },
      mcp_servers: {
        oubliette: {
          command: ctx.mcpServer.command,
          args: ctx.mcpServer.args,
          env: ctx.mcpServer.env,
          // Codex's own default (10 s) is shorter than the first listing may take (15 s).
          startup_timeout_sec: 120,
          // Codex's own default (60 s) would cut off a caller's answer or a job's wait.
          tool_timeout_sec: 86_400,
        },
      },
    });
    expect(launch.files[0]?.content).not.toContain(ctx.modelToken);
  });
});

describe("TOML writer", () => {
  it("escapes what would end or break a basic string", () => {
    const nasty = 'a "quoted" \\path\\ with\nnewline\ttab \u0001\u007f é 🌍';
    expect(tomlString(nasty)).toBe('"a \\"quoted\\" \\\\path\\\\ with\\nnewline\\ttab \\u0001\\u007f é 🌍"');
    expect(readToml(stringifyToml({ s: nasty, "odd key.x": [nasty] }))).toEqual({
      s: nasty,
      "odd key.x": [nasty],
    });
  });

  it("writes the root's keys before any table and nests tables under dotted headers", () => {
    expect(stringifyToml({ a: { b: { c: 1 } }, top: true, empty: {} })).toBe(
      "top = true\n\n[a.b]\nc = 1\n\n[empty]\n",
    );
  });
});

describe("codex driver after a crash", () => {
  it("resumes the thread it had (thread/resume) and goes on with turns on it", () => {
    const driver = codexDriver(
      testContext({
        runtime: "codex",
        model: "gpt-5",
        command: ["/opt/agents/codex/codex"],
        resume: "thr_9",
      }),
    );
    driver.send(2, "again");
    const [initialize] = parsed(driver.start());
    const after = parsed(driver.read(line({ id: initialize?.id, result: {} })).write);
    expect(after[1]).toMatchObject({
      method: "thread/resume",
      params: { threadId: "thr_9", approvalPolicy: "never" },
    });
    const ready = driver.read(line({ id: after[1]?.id, result: { thread: { id: "thr_9" } } }));
    expect(ready.events).toMatchObject([
      { type: "system", subtype: "init", data: { thread_id: "thr_9", resumed: true } },
    ]);
    // The new process starts its MCP servers again: the turn waits for Oubliette's.
    expect(ready.write).toEqual([]);
    const served = driver.read(serverStatus("oubliette", "ready"));
    expect(parsed(served.write)[0]).toMatchObject({ method: "turn/start", params: { threadId: "thr_9" } });
    expect(driver.conversationId?.()).toBe("thr_9");
  });
});
