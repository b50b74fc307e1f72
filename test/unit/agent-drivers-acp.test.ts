import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AgentDriver, DriverContext, DriverFactory } from "../../container-client/src/agents/driver.js";
import { geminiDriver } from "../../container-client/src/agents/gemini.js";
import { opencodeDriver } from "../../container-client/src/agents/opencode.js";
import {
  deltasPerTurn,
  eventOrder,
  eventsOf,
  loadStream,
  parsed,
  printedLines,
  replay,
  testContext,
} from "../support/agent-streams.js";

/** The MCP server the recordings gave OpenCode inline (Gemini had it in its settings file). */
const RECORDED_MCP = {
  name: "echo",
  command: "node",
  args: ["/opt/probe/echo-mcp.mjs"],
  env: { ECHO_MCP_LOG: "/workspace/default/echo-mcp.log" },
};

const recordings: {
  agent: string;
  file: string;
  driver: DriverFactory;
  context: DriverContext;
  call: { call_id: string; name: string };
  turns: string[];
}[] = [
  {
    agent: "OpenCode",
    file: "opencode-acp-multiturn-cancel.events.jsonl",
    driver: opencodeDriver,
    context: testContext({ runtime: "opencode", mcpServer: RECORDED_MCP }),
    call: { call_id: "call_1795314601910", name: "echo_echo" },
    turns: [
      "Calling the tool.TOOL RESULT WAS: echo: ping from fake model. Done.",
      "FAKE REPLY 2: ",
      "FAKE REPLY 3: after the cancel",
    ],
  },
  {
    agent: "Gemini CLI",
    file: "gemini-acp-multiturn-cancel.events.jsonl",
    driver: geminiDriver,
    context: testContext({ runtime: "gemini" }),
    call: { call_id: "mcp_echo_echo__mcp_echo_echo_1795312859235_0", name: "echo (echo MCP Server)" },
    turns: [
      'Calling the tool.TOOL RESULT WAS: {"output":"<untrusted_context>\\necho: ping from fake model\\n</untrusted_context>"}. Done.',
      "FAKE REPLY 1: ",
      "FAKE REPLY 2: after the cancel",
    ],
  },
];

describe.each(recordings)("ACP driver, replaying a recorded $agent session", (recording) => {
  const run = () =>
    replay(recording.driver(recording.context), loadStream(recording.file), {
      messages: ["Please CALL_TOOL echo", "Now a SLOW answer", "after the cancel"],
      interruptMethod: "session/cancel",
    });

  it("writes the recorded handshake, prompts and cancel, each when the recording did", () => {
    // replay() compared every line written with the recorded one; nothing more was written.
    expect(run().extra).toEqual([]);
  });

  it("streams deltas and puts each message together", () => {
    const { events } = run();
    expect(deltasPerTurn(events)).toEqual(recording.turns);
    const [first, ...rest] = recording.turns;
    const afterTool = (first as string).slice("Calling the tool.".length);
    expect(eventsOf(events, "message").map((m) => m.text)).toEqual(["Calling the tool.", afterTool, ...rest]);
  });

  it("maps the MCP tool call (with its input) and its result", () => {
    const { events } = run();
    expect(eventsOf(events, "tool_call")).toEqual([
      { ...recording.call, input: { text: "ping from fake model" } },
    ]);
    expect(eventsOf(events, "tool_result")).toEqual([
      { call_id: recording.call.call_id, output: "echo: ping from fake model", is_error: false },
    ]);
    expect(eventOrder(events)).toEqual([
      "message",
      "tool_call",
      "tool_result",
      "message",
      "completion",
      "message",
      "completion",
      "message",
      "completion",
    ]);
  });

  it("ends each turn with its message's seq, the cancelled one as interrupted", () => {
    expect(eventsOf(run().events, "completion")).toEqual([
      { message_seq: 1, stop_reason: "end_turn" },
      { message_seq: 2, stop_reason: "interrupted" },
      { message_seq: 3, stop_reason: "end_turn" },
    ]);
  });
});

const line = (value: unknown) => JSON.stringify({ jsonrpc: "2.0", ...(value as object) });

/** Runs the handshake with made-up answers; returns what the driver wrote at its end. */
function handshake(driver: AgentDriver): string[] {
  const [initialize] = parsed(driver.start());
  const [sessionNew] = parsed(
    driver.read(line({ id: initialize?.id, result: { protocolVersion: 1 } })).write,
  );
  return driver.read(line({ id: sessionNew?.id, result: { sessionId: "ses_1" } })).write;
}

const update = (update: object) => line({ method: "session/update", params: { sessionId: "ses_1", update } });

describe("ACP driver", () => {
  const context = testContext({ runtime: "opencode" });

  it("holds messages until the session exists, then prompts one at a time", () => {
    const driver = opencodeDriver(context);
    expect(driver.send(1, "first")).toEqual([]);
    const [prompt] = parsed(handshake(driver));
    expect(prompt).toMatchObject({
      jsonrpc: "2.0",
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [{ type: "text", text: "first" }] },
    });
    expect(driver.send(2, "second"), "a message sent mid-turn waits for the turn's end").toEqual([]);
    const done = driver.read(line({ id: prompt?.id, result: { stopReason: "end_turn" } }));
    expect(done.events).toEqual([{ type: "completion", message_seq: 1, stop_reason: "end_turn" }]);
    expect(parsed(done.write)).toMatchObject([
      { method: "session/prompt", params: { prompt: [{ text: "second" }] } },
    ]);
  });

  it("cancels with a notification, and only while a turn is in flight", () => {
    const driver = opencodeDriver(context);
    handshake(driver);
    expect(driver.interrupt()).toEqual([]);
    driver.send(1, "go");
    expect(parsed(driver.interrupt())).toEqual([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } },
    ]);
  });

  it("puts the MCP server inline in session/new for OpenCode, with its env as name/value pairs", () => {
    const driver = opencodeDriver(context);
    const [initialize] = parsed(driver.start());
    const [sessionNew] = parsed(driver.read(line({ id: initialize?.id, result: {} })).write);
    expect(sessionNew?.params).toEqual({
      cwd: "/workspace/default",
      mcpServers: [
        {
          name: "oubliette",
          command: context.mcpServer.command,
          args: context.mcpServer.args,
          env: [
            { name: "OUBLIETTE_SOCKET", value: "/mcp/oubliette.sock" },
            { name: "OUBLIETTE_SESSION_ID", value: "ses_test" },
          ],
        },
      ],
    });
  });

  it("asking, gives the inline MCP server OpenCode's server password emptied (it starts before the guard hides it)", () => {
    const driver = opencodeDriver({ ...context, approvals: "ask" });
    const [initialize] = parsed(driver.start());
    const [sessionNew] = parsed(driver.read(line({ id: initialize?.id, result: {} })).write);
    const [server] = z
      .object({ mcpServers: z.array(z.object({ name: z.literal("oubliette"), env: z.unknown() })) })
      .parse(sessionNew?.params).mcpServers;
    expect(server?.env).toEqual([
      { name: "OUBLIETTE_SOCKET", value: "/mcp/oubliette.sock" },
      { name: "OUBLIETTE_SESSION_ID", value: "ses_test" },
      { name: "OPENCODE_SERVER_PASSWORD", value: "" },
    ]);
  });

  it("answers a recorded permission request with its allow-once option", () => {
    const request = printedLines(loadStream("droid-acp-permission-request.events.jsonl")).find((l) =>
      l.includes('"session/request_permission"'),
    );
    const out = opencodeDriver(context).read(request as string);
    expect(parsed(out.write)).toEqual([
      { jsonrpc: "2.0", id: 0, result: { outcome: { outcome: "selected", optionId: "proceed_once" } } },
    ]);
    expect(out.events).toEqual([
      {
        type: "system",
        subtype: "auto_answer",
        message: "allowed echo___echo (Allow)",
        data: { method: "session/request_permission", granted: true },
      },
    ]);
  });

  it("cancels a permission request that offers no way to allow", () => {
    const out = opencodeDriver(context).read(
      line({
        id: 4,
        method: "session/request_permission",
        params: {
          sessionId: "ses_1",
          options: [{ optionId: "no", name: "No", kind: "reject_once" }],
          toolCall: {},
        },
      }),
    );
    expect(parsed(out.write)).toEqual([
      { jsonrpc: "2.0", id: 4, result: { outcome: { outcome: "cancelled" } } },
    ]);
    expect(out.events[0]).toMatchObject({ type: "system", data: { granted: false } });
  });

  it("refuses the client methods it did not offer, so the agent never waits", () => {
    const out = opencodeDriver(context).read(
      line({ id: "x", method: "fs/read_text_file", params: { sessionId: "ses_1", path: "/etc/passwd" } }),
    );
    expect(parsed(out.write)).toEqual([
      { jsonrpc: "2.0", id: "x", error: { code: -32601, message: expect.any(String) } },
    ]);
  });

  it("announces a call that fails before it runs, then its failure", () => {
    const driver = opencodeDriver(context);
    handshake(driver);
    driver.send(1, "go");
    const pending = driver.read(
      update({
        sessionUpdate: "tool_call",
        toolCallId: "c1",
        title: "bash",
        status: "pending",
        rawInput: { cmd: "x" },
      }),
    );
    expect(pending.events).toEqual([]);
    const failed = driver.read(
      update({
        sessionUpdate: "tool_call_update",
        toolCallId: "c1",
        status: "failed",
        rawOutput: { error: "denied" },
      }),
    );
    expect(failed.events).toEqual([
      { type: "tool_call", call_id: "c1", name: "bash", input: { cmd: "x" } },
      { type: "tool_result", call_id: "c1", output: '{"error":"denied"}', is_error: true },
    ]);
    const again = update({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed" });
    expect(driver.read(again).events, "a repeated end is not told twice").toEqual([]);
  });

  it("ignores updates of another session", () => {
    const driver = opencodeDriver(context);
    handshake(driver);
    const other = line({
      method: "session/update",
      params: {
        sessionId: "ses_2",
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
      },
    });
    expect(driver.read(other).events).toEqual([]);
  });

  it("maps the other stop reasons, and a failed prompt, going on with the next message each time", () => {
    const driver = opencodeDriver(context);
    handshake(driver);
    const [prompt1] = parsed(driver.send(1, "one"));
    driver.send(2, "two");
    driver.send(3, "three");
    const refusal = driver.read(line({ id: prompt1?.id, result: { stopReason: "refusal" } }));
    expect(refusal.events).toEqual([{ type: "completion", message_seq: 1, stop_reason: "refusal" }]);
    const [prompt2] = parsed(refusal.write);
    const limit = driver.read(line({ id: prompt2?.id, result: { stopReason: "max_tokens" } }));
    expect(limit.events).toEqual([
      { type: "error", message: "the model reached its output token limit" },
      { type: "completion", message_seq: 2, stop_reason: "error" },
    ]);
    const [prompt3] = parsed(limit.write);
    const failed = driver.read(line({ id: prompt3?.id, error: { code: -32603, message: "boom" } }));
    expect(failed.events).toEqual([
      { type: "error", message: "session/prompt failed: boom" },
      { type: "completion", message_seq: 3, stop_reason: "error" },
    ]);
    expect(failed.write).toEqual([]);
  });

  it("ends every waiting message in error when the session cannot be made", () => {
    const driver = geminiDriver(testContext({ runtime: "gemini" }));
    const [initialize] = parsed(driver.start());
    driver.send(1, "one");
    const out = driver.read(line({ id: initialize?.id, error: { code: -32000, message: "auth required" } }));
    expect(out.events).toEqual([
      { type: "error", message: "initialize failed: auth required" },
      { type: "completion", message_seq: 1, stop_reason: "error" },
    ]);
  });
});

/** Every variable that looks like a credential holds the placeholder, never a real key. */
function expectOnlyPlaceholderCredentials(env: Record<string, string>, token: string): void {
  // OpenCode's own API password is the session's lock on its loopback server, not a model credential.
  const credentials = Object.entries(env).filter(
    ([name]) => /KEY|TOKEN|SECRET|PASSWORD/i.test(name) && name !== "OPENCODE_SERVER_PASSWORD",
  );
  expect(credentials.length).toBeGreaterThan(0);
  for (const [, value] of credentials) expect(value).toBe(token);
}

describe("OpenCode launch", () => {
  const context = testContext({
    runtime: "opencode",
    model: "gpt-5",
    command: ["/opt/agents/opencode/opencode"],
  });
  const launch = opencodeDriver(context).launch();

  it("locks OpenCode's loopback API with a password of its own, new for every launch", () => {
    const password = launch.env.OPENCODE_SERVER_PASSWORD ?? "";
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    expect(opencodeDriver(context).launch().env.OPENCODE_SERVER_PASSWORD).not.toBe(password);
  });

  it("runs `opencode acp` with its config file, the placeholder credential and no phoning home", () => {
    expect(launch.argv).toEqual(["/opt/agents/opencode/opencode", "acp"]);
    expect(launch.env).toMatchObject({
      OPENCODE_CONFIG: launch.files[0]?.path,
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    });
    expectOnlyPlaceholderCredentials(launch.env, context.modelToken);
    expect(launch.files[0]?.path.startsWith(`${context.home}/`)).toBe(true);
  });

  it("configures the forwarder as an OpenAI-compatible provider, its model, and allows every tool", () => {
    const content = launch.files[0]?.content ?? "";
    expect(JSON.parse(content)).toEqual({
      model: "oubliette/gpt-5",
      provider: {
        oubliette: {
          npm: "@ai-sdk/openai-compatible",
          name: "Oubliette model forwarder",
          options: { baseURL: "http://127.0.0.1:43210/v1", apiKey: "{env:OUBLIETTE_MODEL_TOKEN}" },
          models: { "gpt-5": { name: "gpt-5" } },
        },
      },
      permission: { "*": "allow" },
    });
    expect(content).not.toContain(context.modelToken);
  });
});

describe("Gemini CLI launch", () => {
  const context = testContext({
    runtime: "gemini",
    model: "gemini-2.5-pro",
    command: ["node", "/opt/agents/gemini/gemini.js"],
  });
  const launch = geminiDriver(context).launch();

  it("runs ACP mode with an explicit model, auto-approval and the forwarder as its API", () => {
    expect(launch.argv).toEqual([
      "node",
      "/opt/agents/gemini/gemini.js",
      "--acp",
      "-m",
      "gemini-2.5-pro",
      "--yolo",
      "--skip-trust",
    ]);
    expect(launch.env).toEqual({
      GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:43210",
      GEMINI_API_KEY: context.modelToken,
    });
    expectOnlyPlaceholderCredentials(launch.env, context.modelToken);
  });

  it("writes settings with API-key auth, no statistics, telemetry or updates, and the trusted MCP server", () => {
    expect(launch.files.map((f) => f.path)).toEqual([`${context.home}/.gemini/settings.json`]);
    expect(JSON.parse(launch.files[0]?.content ?? "")).toEqual({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true },
      mcpServers: {
        oubliette: {
          command: context.mcpServer.command,
          args: context.mcpServer.args,
          env: context.mcpServer.env,
          trust: true,
          // Gemini's own default (10 minutes) would cut off a long caller answer.
          timeout: 86_400_000,
        },
      },
    });
  });

  it("leaves the MCP server out of session/new (its settings have it)", () => {
    const driver = geminiDriver(context);
    const [initialize] = parsed(driver.start());
    const [sessionNew] = parsed(driver.read(line({ id: initialize?.id, result: {} })).write);
    expect(sessionNew?.params).toEqual({ cwd: "/workspace/default", mcpServers: [] });
  });
});

describe("ACP driver after a crash", () => {
  it("takes the session up with session/load, keeps its history replay out of the events, then prompts", () => {
    const driver = opencodeDriver(testContext({ runtime: "opencode", resume: "ses_earlier" }));
    expect(driver.send(3, "go on")).toEqual([]);
    const [initialize] = parsed(driver.start());
    const [load] = parsed(
      driver.read(
        line({
          id: initialize?.id,
          result: { protocolVersion: 1, agentCapabilities: { loadSession: true } },
        }),
      ).write,
    );
    expect(load).toMatchObject({
      method: "session/load",
      params: { sessionId: "ses_earlier", cwd: "/workspace/default" },
    });
    // The replayed conversation is history: no events for it.
    const replay = driver.read(
      line({
        method: "session/update",
        params: {
          sessionId: "ses_earlier",
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "old" } },
        },
      }),
    );
    expect(replay.events).toEqual([]);
    const ready = driver.read(line({ id: load?.id, result: null }));
    expect(ready.events).toEqual([
      { type: "system", subtype: "init", data: { session_id: "ses_earlier", resumed: true } },
    ]);
    expect(parsed(ready.write)).toMatchObject([
      { method: "session/prompt", params: { sessionId: "ses_earlier", prompt: [{ text: "go on" }] } },
    ]);
    expect(driver.conversationId?.()).toBe("ses_earlier");
  });

  it("starts a new session, and says so, when the agent cannot load the old one", () => {
    const driver = opencodeDriver(testContext({ runtime: "opencode", resume: "ses_earlier" }));
    const [initialize] = parsed(driver.start());
    const [load] = parsed(
      driver.read(
        line({
          id: initialize?.id,
          result: { protocolVersion: 1, agentCapabilities: { loadSession: true } },
        }),
      ).write,
    );
    const failed = driver.read(line({ id: load?.id, error: { code: -32603, message: "no such session" } }));
    expect(failed.events).toMatchObject([
      { type: "system", subtype: "warning", message: expect.stringContaining("no such session") },
    ]);
    expect(parsed(failed.write)).toMatchObject([{ method: "session/new" }]);
    const without = opencodeDriver(testContext({ runtime: "opencode", resume: "ses_earlier" }));
    const [init2] = parsed(without.start());
    const fresh = without.read(line({ id: init2?.id, result: { protocolVersion: 1 } }));
    expect(fresh.events).toMatchObject([{ type: "system", subtype: "warning" }]);
    expect(parsed(fresh.write)).toMatchObject([{ method: "session/new" }]);
  });
});

describe("Gemini CLI after a crash", () => {
  it("keeps a copy of its recorded chats, which its session/load would empty first, and loads that", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const { writeHome } = await import("../../container-client/src/runner/agent-home.js");
    const home = mkdtempSync(join(tmpdir(), "gemini-home-"));
    const chats = join(home, ".gemini", "tmp", "default", "chats");
    mkdirSync(chats, { recursive: true });
    writeFileSync(join(chats, "session-2026-11-25T05-57-6fe268d7.jsonl"), "the conversation\n");
    const launch = geminiDriver(testContext({ runtime: "gemini", home, resume: "6fe268d7-1a4a" })).launch();
    expect(geminiDriver(testContext({ runtime: "gemini", home })).launch().keep).toBeUndefined();
    writeHome({ home, files: [], keep: launch.keep ?? [] });
    writeHome({ home, files: [], keep: launch.keep ?? [] });
    const names = readdirSync(chats).sort();
    expect(names).toHaveLength(2);
    const kept = names.find((n) => n.startsWith("session-kept-")) ?? "";
    expect(kept).toMatch(/^session-kept-\d+-2026-11-25T05-57-6fe268d7\.jsonl$/);
    expect(readFileSync(join(chats, kept), "utf8")).toBe("the conversation\n");
  });
});
