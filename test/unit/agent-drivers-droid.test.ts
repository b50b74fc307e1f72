/** The Factory Droid adapter against a recorded stream-jsonrpc session (three turns, an interrupt, a fourth). */
import { describe, expect, it } from "vitest";
import { droidDriver } from "../../container-client/src/agents/droid.js";
import {
  loadStream,
  ofType,
  replayOnCue as replay,
  type SentKind,
  type StreamEntry,
  launchContext as testContext,
} from "../support/agent-streams.js";

function kindOf(sent: string): SentKind {
  const o = JSON.parse(sent) as { method: string; params: { text?: string } };
  if (o.method === "droid.add_user_message") return { kind: "message", text: o.params.text ?? "" };
  if (o.method === "droid.interrupt_session") return { kind: "interrupt" };
  return { kind: "handshake" };
}

/** The recorder named its initialise request "1"; the driver names its own. */
function withInitId(sample: StreamEntry[], id: string): StreamEntry[] {
  return sample.map((e) =>
    "line" in e && e.line.includes('"type":"response"') && e.line.includes('"id":"1"')
      ? { ...e, line: e.line.replace('"id":"1"', `"id":"${id}"`) }
      : e,
  );
}

const context = testContext({ runtime: "droid", command: ["/opt/agents/droid/droid"] });

describe("Factory Droid adapter", () => {
  const sample = withInitId(
    loadStream("droid-stream-jsonrpc-multiturn-mcp-interrupt.events.jsonl"),
    "oub-init",
  );

  it("maps a recorded session to common events, one completion per turn, the interrupted one too", () => {
    const { events } = replay(droidDriver(context), sample, kindOf);
    expect(ofType(events, "completion")).toEqual([
      { type: "completion", message_seq: 1, stop_reason: "end_turn" },
      { type: "completion", message_seq: 2, stop_reason: "end_turn" },
      { type: "completion", message_seq: 3, stop_reason: "interrupted" },
      { type: "completion", message_seq: 4, stop_reason: "end_turn" },
    ]);
    expect(ofType(events, "tool_call").map((e) => [e.name, e.input])).toEqual([
      ["ToolSearch", { query: "echo" }],
      ["echo___echo", { text: "ping from fake model" }],
    ]);
    expect(ofType(events, "tool_result")).toContainEqual({
      type: "tool_result",
      call_id: "toolu_1795312173273",
      output: "echo: ping from fake model",
    });
    expect(ofType(events, "message").map((e) => e.text)).toContain(
      "TOOL RESULT WAS: echo: ping from fake model. Done.",
    );
    expect(
      ofType(events, "delta")
        .map((e) => e.text)
        .join(""),
    ).toContain("FAKE REPLY 4: after the interrupt");
    expect(ofType(events, "system")[0]).toMatchObject({ subtype: "init" });
    // User messages echoed back by droid are not the assistant's.
    expect(ofType(events, "message").map((e) => e.text)).not.toContain("first hello");
  });

  it("writes the handshake, user turns and the interrupt in the shape the CLI took", () => {
    const { written } = replay(droidDriver(context), sample, kindOf);
    const init = JSON.parse(written[0]?.line ?? "") as Record<string, unknown>;
    expect(init).toMatchObject({
      jsonrpc: "2.0",
      factoryApiVersion: "1.0.0",
      type: "request",
      method: "droid.initialize_session",
      params: {
        cwd: "/workspace/default",
        modelId: "custom:claude-sonnet-4-5",
        autonomyLevel: "high",
        mcpServers: [
          { name: "oubliette", command: "/usr/bin/node", args: ["/opt/oubliette/container-client.mjs"] },
        ],
      },
    });
    for (const { line, recorded } of written.filter((w) => w.recorded !== null)) {
      const { id: _mine, ...mine } = JSON.parse(line) as Record<string, unknown>;
      const { id: _theirs, ...theirs } = JSON.parse(recorded ?? "") as Record<string, unknown>;
      expect(mine).toEqual(theirs);
    }
  });

  it("holds a message sent before the session is initialised and sends it once it is", () => {
    const driver = droidDriver(context);
    driver.start();
    expect(driver.send(1, "early bird")).toEqual([]);
    const out = driver.read(
      JSON.stringify({
        jsonrpc: "2.0",
        type: "response",
        factoryApiVersion: "1.0.0",
        id: "oub-init",
        result: { sessionId: "s" },
      }),
    );
    expect(out.write.map((l) => JSON.parse(l) as unknown)).toEqual([
      expect.objectContaining({ method: "droid.add_user_message", params: { text: "early bird" } }),
    ]);
    expect(driver.send(2, "later")).toHaveLength(1);
  });

  it("launches with a custom model at the forwarder, its key from the environment (the placeholder), air-gapped", () => {
    const launch = droidDriver(context).launch();
    expect(launch.argv).toEqual([
      "/opt/agents/droid/droid",
      "exec",
      "--input-format",
      "stream-jsonrpc",
      "--output-format",
      "stream-jsonrpc",
    ]);
    expect(launch.env).toEqual({ OUBLIETTE_MODEL_KEY: context.modelToken, FACTORY_AIRGAP_ENABLED: "1" });
    const settings = launch.files.find((f) => f.path === `${context.home}/.factory/settings.json`);
    expect(JSON.parse(settings?.content ?? "")).toMatchObject({
      customModels: [
        {
          model: "claude-sonnet-4-5",
          baseUrl: "http://127.0.0.1:45678",
          apiKey: ["$", "{OUBLIETTE_MODEL_KEY}"].join(""),
          provider: "anthropic",
        },
      ],
    });
  });

  it("refuses a request it cannot answer instead of leaving the agent waiting", () => {
    const out = droidDriver(context).read(
      JSON.stringify({
        jsonrpc: "2.0",
        type: "request",
        factoryApiVersion: "1.0.0",
        id: "q1",
        method: "droid.ask_user",
        params: {},
      }),
    );
    expect(JSON.parse(out.write[0] ?? "")).toMatchObject({
      type: "response",
      id: "q1",
      error: { code: -32601 },
    });
  });

  const response = (id: string, body: Record<string, unknown>) =>
    JSON.stringify({ jsonrpc: "2.0", type: "response", factoryApiVersion: "1.0.0", id, ...body });
  const notification = (notification: Record<string, unknown>) =>
    JSON.stringify({
      jsonrpc: "2.0",
      type: "notification",
      factoryApiVersion: "1.0.0",
      method: "droid.session_notification",
      params: { notification },
    });

  it("says the session id droid gave, so that a crash can resume it", () => {
    const driver = droidDriver(context);
    driver.start();
    expect(driver.conversationId?.()).toBeUndefined();
    driver.read(response("oub-init", { result: { sessionId: "droid-s1" } }));
    expect(driver.conversationId?.()).toBe("droid-s1");
  });

  it("loads the session it had after a crash (droid.load_session), quiet about the replay, and goes on", () => {
    const driver = droidDriver({ ...context, resume: "droid-s1" });
    const [load] = driver.start().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(load).toMatchObject({
      method: "droid.load_session",
      params: { sessionId: "droid-s1", mcpServers: [{ name: "oubliette" }] },
    });
    expect(driver.send(3, "after the crash")).toEqual([]);
    // What droid re-sends of the old conversation while loading is not this turn's output.
    expect(driver.read(notification({ type: "assistant_text_delta", textDelta: "old" })).events).toEqual([]);
    const loaded = driver.read(response(String(load?.id), { result: {} }));
    expect(loaded.events).toEqual([
      expect.objectContaining({
        type: "system",
        subtype: "init",
        data: { droid_session_id: "droid-s1", resumed: true },
      }),
    ]);
    expect(loaded.write.map((l) => JSON.parse(l) as unknown)).toEqual([
      expect.objectContaining({ method: "droid.add_user_message", params: { text: "after the crash" } }),
    ]);
    expect(driver.conversationId?.()).toBe("droid-s1");
    expect(driver.read(notification({ type: "assistant_text_delta", textDelta: "new" })).events).toEqual([
      { type: "delta", text: "new" },
    ]);
  });

  it("starts a new session, with a warning, when droid cannot load the old one", () => {
    const driver = droidDriver({ ...context, resume: "gone" });
    const [load] = driver.start().map((l) => JSON.parse(l) as Record<string, unknown>);
    driver.send(2, "hello again");
    const refused = driver.read(
      response(String(load?.id), { error: { code: -32004, message: "session not found" } }),
    );
    expect(refused.events).toEqual([
      expect.objectContaining({
        type: "system",
        subtype: "warning",
        message: expect.stringContaining("session not found"),
      }),
    ]);
    expect(refused.write.map((l) => JSON.parse(l) as unknown)).toEqual([
      expect.objectContaining({ method: "droid.initialize_session" }),
    ]);
    const started = driver.read(response("oub-init", { result: { sessionId: "droid-s2" } }));
    expect(started.write.map((l) => JSON.parse(l) as unknown)).toEqual([
      expect.objectContaining({ method: "droid.add_user_message", params: { text: "hello again" } }),
    ]);
    expect(driver.conversationId?.()).toBe("droid-s2");
  });
});
