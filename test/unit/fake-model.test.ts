import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type Ask,
  anthropicClient,
  CLIENTS,
  type Client,
  chatClient,
  geminiClient,
  sseData,
  type Tool,
} from "../fixtures/fake-model/clients/index.js";
import {
  DEFAULT_TEXT,
  type FakeModel,
  inputTokens,
  type Protocol,
  SIDE_TEXT,
  startFakeModel,
} from "../fixtures/fake-model/index.js";

/** The `echo` tool of an MCP server `echo`, named as each protocol's CLI names it. */
const MANGLED_ECHO: Record<Protocol, Tool> = {
  anthropic: { name: "mcp__echo__echo" },
  chat: { name: "echo_echo" },
  responses: { namespace: "mcp__echo", name: "echo" },
  gemini: { name: "mcp_echo_echo" },
};
/** Tools that must not be mistaken for `echo`. */
const DECOYS: Tool[] = [{ name: "Bash" }, { name: "echoes" }, { name: "echo_server_status" }];
const END: Record<Protocol, string> = {
  anthropic: "end_turn",
  chat: "stop",
  responses: "completed",
  gemini: "STOP",
};
const CALLED: Record<Protocol, string> = {
  anthropic: "tool_use",
  chat: "tool_calls",
  responses: "completed",
  gemini: "STOP",
};
const RATE_LIMITED: Record<Protocol, object> = {
  anthropic: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
  chat: { error: { type: "rate_limit_exceeded", message: "slow down" } },
  responses: { error: { type: "rate_limit_exceeded", message: "slow down" } },
  gemini: { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "slow down" } },
};

let model: FakeModel;
beforeEach(async () => {
  model = await startFakeModel();
});
afterEach(async () => {
  await model.close();
});

function post(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${model.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "test" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

function send(client: Client, ask: Ask, init?: RequestInit): Promise<Response> {
  return post(client.path(ask.stream), client.body(ask), init);
}

async function turn(client: Client, ask: Ask) {
  const res = await send(client, ask);
  expect(res.status).toBe(200);
  return client.read(res, ask.stream);
}

function tools(protocol: Protocol): Tool[] {
  return [...DECOYS, MANGLED_ECHO[protocol]];
}

describe.each(CLIENTS)("fake model, $protocol", (client) => {
  const protocol = client.protocol;

  describe.each([false, true])("streamed: %s", (stream) => {
    it("answers scripted text and ends the turn, with deterministic usage", async () => {
      model.script([{ text: "Hello from the script, in several words." }]);
      const body = client.body({ user: "hi", tools: tools(protocol), stream });
      const res = await post(client.path(stream), body);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain(stream ? "text/event-stream" : "application/json");
      const reply = await client.read(res, stream);
      expect(reply).toMatchObject({
        text: "Hello from the script, in several words.",
        calls: [],
        stop: END[protocol],
      });
      expect(reply.usage.input).toBe(inputTokens(Buffer.byteLength(JSON.stringify(body))));
      expect(reply.usage.output).toBe(Math.ceil("Hello from the script, in several words.".length / 4));
      if (stream) expect(reply.textEvents).toBeGreaterThan(1);
      expect(model.remaining).toBe(0);
      expect(model.requests).toHaveLength(1);
      expect(model.requests[0]).toMatchObject({ protocol, method: "POST", main: true, body });
      expect(model.requests[0]?.headers["x-api-key"]).toBe("test");
    });

    it("calls the offered tool under its mangled name", async () => {
      model.script([{ text: "Calling it.", tool: "echo", arguments: { text: "ping", n: 2 } }]);
      const reply = await turn(client, { user: "please echo", tools: tools(protocol), stream });
      const { name, namespace } = MANGLED_ECHO[protocol];
      expect(reply.text).toBe("Calling it.");
      expect(reply.calls).toEqual([
        {
          id: protocol === "gemini" ? "" : expect.any(String),
          name,
          ...(namespace ? { namespace } : {}),
          arguments: { text: "ping", n: 2 },
        },
      ]);
      expect(reply.stop).toBe(CALLED[protocol]);
      expect(reply.usage.output).toBeGreaterThan(0);
    });

    it("says a fixed text when nothing is scripted", async () => {
      const reply = await turn(client, { user: "hi", tools: tools(protocol), stream });
      expect(reply.text).toBe(DEFAULT_TEXT);
      expect(reply.stop).toBe(END[protocol]);
    });
  });

  it("answers side requests (no tools) with a short text without consuming the script", async () => {
    model.script([{ text: "The main answer." }]);
    const side = await turn(client, { user: "Generate a title for this conversation.", stream: false });
    expect(side.text).toBe(SIDE_TEXT);
    expect(side.usage.output).toBeGreaterThan(0);
    expect(model.remaining).toBe(1);
    const sideStreamed = await turn(client, { user: "Another side call.", stream: true });
    expect(sideStreamed.text).toBe(SIDE_TEXT);
    const main = await turn(client, { user: "hi", tools: tools(protocol), stream: true });
    expect(main.text).toBe("The main answer.");
    expect(model.requests.map((r) => r.main)).toEqual([false, false, true]);
  });

  it("fails every side request with the error a test sets, main requests untouched, until cleared", async () => {
    model.script([{ text: "The main answer." }]);
    model.answerSideRequests({ error: { status: 500, message: "the provider is down" } });
    for (const stream of [false, true]) {
      const failed = await send(client, { user: "Generate a title.", stream });
      expect(failed.status).toBe(500);
      expect(JSON.stringify(await failed.json())).toContain("the provider is down");
    }
    const main = await turn(client, { user: "hi", tools: tools(protocol), stream: true });
    expect(main.text).toBe("The main answer.");
    model.answerSideRequests({ text: "A title" });
    expect((await turn(client, { user: "Title?", stream: true })).text).toBe("A title");
    model.answerSideRequests(undefined);
    expect((await turn(client, { user: "Title?", stream: false })).text).toBe(SIDE_TEXT);
    expect(model.requests.map((r) => r.main)).toEqual([false, false, true, false, false]);
  });

  it("streams a slow reply over its delay and survives a client that leaves mid-stream", async () => {
    const slow = "one two three four five six seven eight";
    model.script([{ text: slow, delay_ms: 3_000 }, { text: "After the interrupt." }]);
    const abort = new AbortController();
    const started = Date.now();
    const res = await send(
      client,
      { user: "go slowly", tools: tools(protocol), stream: true },
      { signal: abort.signal },
    );
    let firstDeltaMs = -1;
    for await (const data of sseData(res)) {
      if (data.includes("one ")) {
        firstDeltaMs = Date.now() - started;
        break;
      }
    }
    abort.abort();
    expect(firstDeltaMs).toBeGreaterThanOrEqual(0);
    expect(firstDeltaMs).toBeLessThan(1_500);

    // The server stops at once, not at the slow reply's next delta (~400 ms away).
    for (let i = 0; i < 10 && model.active > 0; i++) await sleep(20);
    expect(model.active).toBe(0);

    const next = Date.now();
    const reply = await turn(client, { user: "are you there?", tools: tools(protocol), stream: true });
    expect(reply.text).toBe("After the interrupt.");
    expect(Date.now() - next).toBeLessThan(1_500);
    expect(model.remaining).toBe(0);
  });

  it("spreads a slow reply's deltas over its delay", async () => {
    model.script([{ text: "Slowly, word by word, to the end.", delay_ms: 600 }]);
    const started = Date.now();
    const reply = await turn(client, { user: "slowly", tools: tools(protocol), stream: true });
    expect(reply.text).toBe("Slowly, word by word, to the end.");
    expect(reply.textEvents).toBeGreaterThanOrEqual(7);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
  });

  it("answers a scripted error in the protocol's error shape, then goes on", async () => {
    model.script([{ error: { status: 429, message: "slow down" } }, { text: "Recovered." }]);
    const res = await send(client, { user: "hi", tools: tools(protocol), stream: true });
    expect(res.status).toBe(429);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toMatchObject(RATE_LIMITED[protocol]);
    expect((await turn(client, { user: "again", tools: tools(protocol), stream: true })).text).toBe(
      "Recovered.",
    );
  });

  it("refuses a body that is not JSON, or not a request of the protocol, with 400", async () => {
    model.script([{ text: "kept" }]);
    const bad = await post(client.path(false), "{not json");
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain("not JSON");
    const wrong = await post(client.path(false), protocol === "gemini" ? { contents: "nope" } : { model: 5 });
    expect(wrong.status).toBe(400);
    expect(model.remaining).toBe(1);
  });

  it("reads back tool results and the last user-written text", async () => {
    const { name } = MANGLED_ECHO[protocol];
    await turn(client, {
      user: "please echo",
      tools: tools(protocol),
      stream: false,
      toolResult: { id: "call_7", name, text: "echo: ping" },
    });
    expect(model.toolResults()).toEqual([{ protocol, tool_call_id: "call_7", text: "echo: ping" }]);
    expect(model.lastUserText()).toBe("please echo");
    // Only requests from an index on: what one test's turns sent, not an earlier test's.
    expect(model.toolResults(model.requests.length)).toEqual([]);
  });
});

describe("fake model, ToolSearch detour", () => {
  const claudeToolSearch: Tool = {
    name: "ToolSearch",
    description: 'Fetches deferred tools. Query forms: "select:Read,Edit" fetches exact tools by name.',
    schema: {
      type: "object",
      properties: {
        query: { type: "string", description: 'Use "select:<tool_name>" for direct selection.' },
        max_results: { type: "number", default: 5 },
      },
      required: ["query", "max_results"],
      additionalProperties: false,
    },
  };

  it("searches for a deferred tool first (Claude Code), then calls it", async () => {
    model.script([{ tool: "echo", arguments: { text: "ping" } }, { text: "Done." }]);
    const deferred = { system: "Deferred tools, load with ToolSearch:\nWebFetch\nmcp__echo__echo" };
    const search = await turn(anthropicClient, {
      user: "please echo",
      tools: [{ name: "Bash" }, claudeToolSearch],
      stream: true,
      extra: deferred,
    });
    expect(search.calls).toEqual([
      {
        id: expect.any(String),
        name: "ToolSearch",
        arguments: { query: "select:mcp__echo__echo", max_results: 5 },
      },
    ]);
    expect(search.stop).toBe("tool_use");
    expect(model.remaining).toBe(2);

    const call = await turn(anthropicClient, {
      user: "please echo",
      tools: [{ name: "Bash" }, claudeToolSearch, { name: "mcp__echo__echo" }],
      stream: true,
      extra: deferred,
    });
    expect(call.calls).toEqual([
      { id: expect.any(String), name: "mcp__echo__echo", arguments: { text: "ping" } },
    ]);
    expect(model.remaining).toBe(1);
  });

  it("searches by the bare name when the tool is not mentioned and the schema knows no select: (Droid)", async () => {
    model.script([{ tool: "echo", arguments: {} }]);
    const droidSearch: Tool = {
      name: "ToolSearch",
      description: "Search for tools by keyword.",
      schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    };
    const reply = await turn(anthropicClient, { user: "echo it", tools: [droidSearch], stream: false });
    expect(reply.calls).toEqual([
      { id: expect.any(String), name: "ToolSearch", arguments: { query: "echo" } },
    ]);
    const after = await turn(anthropicClient, {
      user: "echo it",
      tools: [droidSearch, { name: "echo___echo" }],
      stream: false,
    });
    expect(after.calls.map((c) => c.name)).toEqual(["echo___echo"]);
  });

  it("treats a defer_loading tool as callable only once a tool_reference loaded it", async () => {
    model.script([{ tool: "echo", arguments: {} }]);
    const body = anthropicClient.body({ user: "echo it", tools: [claudeToolSearch], stream: false });
    const tools = [
      ...(body.tools as object[]),
      { name: "mcp__echo__echo", input_schema: {}, defer_loading: true },
    ];
    const first = await anthropicClient.read(await post("/v1/messages", { ...body, tools }), false);
    expect(first.calls.map((c) => c.name)).toEqual(["ToolSearch"]);
    const id = first.calls[0]?.id ?? "";
    const messages = [
      ...(body.messages as object[]),
      { role: "assistant", content: [{ type: "tool_use", id, name: "ToolSearch", input: {} }] },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: id,
            content: [{ type: "tool_reference", tool_name: "mcp__echo__echo" }],
          },
          { type: "text", text: "Tool loaded." },
        ],
      },
    ];
    const second = await anthropicClient.read(
      await post("/v1/messages", { ...body, tools, messages }),
      false,
    );
    expect(second.calls.map((c) => c.name)).toEqual(["mcp__echo__echo"]);
    expect(model.lastUserText()).toBe("echo it");
  });

  it("gives up on a tool that never appears, naming it, and moves on", async () => {
    model.script([{ tool: "missing", arguments: {} }, { text: "Next step." }]);
    const ask = { user: "call it", tools: [claudeToolSearch], stream: false };
    expect((await turn(anthropicClient, ask)).calls.map((c) => c.name)).toEqual(["ToolSearch"]);
    expect((await turn(anthropicClient, ask)).calls.map((c) => c.name)).toEqual(["ToolSearch"]);
    const gaveUp = await turn(anthropicClient, ask);
    expect(gaveUp.calls).toEqual([]);
    expect(gaveUp.text).toContain('"missing"');
    expect((await turn(anthropicClient, ask)).text).toBe("Next step.");
  });

  it("answers a missing tool with a text at once when there is no search tool", async () => {
    model.script([{ tool: "echo", arguments: {} }]);
    const reply = await turn(chatClient, { user: "x", tools: [{ name: "Bash" }], stream: true });
    expect(reply.calls).toEqual([]);
    expect(reply.text).toContain("offered: Bash");
    expect(model.remaining).toBe(0);
  });
});

describe("fake model, side endpoints and limits", () => {
  it("counts tokens without consuming the script", async () => {
    model.script([{ text: "kept" }]);
    const body = anthropicClient.body({ user: "count me", stream: false });
    const anthropic = await post("/v1/messages/count_tokens?beta=true", body);
    expect(await anthropic.json()).toEqual({
      input_tokens: inputTokens(Buffer.byteLength(JSON.stringify(body))),
    });
    const gemini = await post("/v1beta/models/gemini-test:countTokens", { contents: [] });
    expect(await gemini.json()).toEqual({ totalTokens: expect.any(Number) });
    expect(model.remaining).toBe(1);
    expect(model.requests.map((r) => [r.protocol, r.main])).toEqual([
      ["anthropic", false],
      ["gemini", false],
    ]);
  });

  it("answers a side request that asks for JSON with JSON its schema allows (Gemini's next-speaker check)", async () => {
    const schema = {
      type: "object",
      properties: {
        reasoning: { type: "string" },
        next_speaker: { type: "string", enum: ["user", "model"] },
      },
      required: ["reasoning", "next_speaker"],
    };
    const extra = { generationConfig: { responseMimeType: "application/json", responseJsonSchema: schema } };
    const reply = await turn(geminiClient, { user: "Who speaks next?", stream: false, extra });
    expect(JSON.parse(reply.text)).toEqual({ reasoning: "xx", next_speaker: "user" });
  });

  it("lists the models requests named, and configured ones, at GET /v1/models", async () => {
    await model.close();
    model = await startFakeModel({ models: ["fake-configured"] });
    await turn(chatClient, { user: "hi", stream: false });
    const res = await fetch(`${model.url}/v1/models?client_version=0.169.0`);
    expect(res.status).toBe(200);
    const list = (await res.json()) as { data: { id: string }[] };
    expect(list.data.map((m) => m.id)).toEqual(["fake-configured", "gpt-test"]);
  });

  it("answers unknown paths with 404 and wrong methods with 405, in JSON", async () => {
    const unknown = await post("/api/hello", {});
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { type: "not_found_error" } });
    const wrongMethod = await fetch(`${model.url}/v1/messages`);
    expect(wrongMethod.status).toBe(405);
    expect(model.requests.map((r) => r.path)).toEqual(["/api/hello", "/v1/messages"]);
  });

  it("refuses a body over the limit with 413", async () => {
    await model.close();
    model = await startFakeModel({ maxBodyBytes: 1024 });
    const res = await post("/v1/messages", {
      model: "m",
      messages: [{ role: "user", content: "x".repeat(4096) }],
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "request_too_large" } });
  });

  it("reads a gzip-compressed body and refuses an encoding it does not know with 415", async () => {
    model.script([{ text: "Unzipped." }]);
    const body = chatClient.body({ user: "hi", tools: [{ name: "Bash" }], stream: false });
    const zipped = await post("/v1/chat/completions", null, {
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify(body)),
    });
    expect((await chatClient.read(zipped, false)).text).toBe("Unzipped.");
    expect(model.requests[0]?.body).toEqual(body);
    const unknown = await post("/v1/chat/completions", "{}", {
      headers: { "content-type": "application/json", "content-encoding": "snappy" },
    });
    expect(unknown.status).toBe(415);
  });

  it("holds a slow non-streamed reply for its delay", async () => {
    model.script([{ text: "Slow and whole.", delay_ms: 300 }]);
    const started = Date.now();
    const reply = await turn(chatClient, { user: "hi", tools: [{ name: "Bash" }], stream: false });
    expect(reply.text).toBe("Slow and whole.");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it("finds Claude Code's user text behind reminders and a trailing system message", async () => {
    const body = {
      model: "claude-test",
      max_tokens: 1024,
      tools: [{ name: "Bash", input_schema: { type: "object" } }],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "<system-reminder>\nAttribution rules.\n</system-reminder>" },
            { type: "text", text: "what is 2+2?" },
          ],
        },
        { role: "system", content: [{ type: "text", text: "# Environment\nToday's date is 2026-11-22." }] },
      ],
    };
    expect((await post("/v1/messages?beta=true", body)).status).toBe(200);
    expect(model.lastUserText()).toBe("what is 2+2?");
  });

  it("drops the steps left unconsumed when told, so one test's leftovers never answer the next", async () => {
    model.script([{ text: "one" }, { text: "two" }]);
    model.reset();
    expect(model.remaining).toBe(0);
    const reply = await turn(chatClient, { user: "hi", tools: [{ name: "Bash" }], stream: false });
    expect(reply.text).toBe(DEFAULT_TEXT);
  });

  it("rejects a malformed script step", () => {
    expect(() => model.script([{ text: "" }])).toThrow();
    expect(() => model.script([{ error: { status: 200, message: "not an error" } }])).toThrow();
    expect(() => model.script([{ text: "x", delay_ms: -1 }])).toThrow();
    expect(model.remaining).toBe(0);
  });
});

describe("fake model, lanes", () => {
  let laned: FakeModel;
  beforeEach(async () => {
    laned = await startFakeModel({ laneOf: (headers) => headers["x-lane"] ?? null });
  });
  afterEach(async () => {
    await laned.close();
  });

  function ask(lane: string | null, user: string, stream = false) {
    const ask: Ask = { user, tools: tools("anthropic"), stream };
    return fetch(`${laned.url}${anthropicClient.path(stream)}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": "test",
        ...(lane ? { "x-lane": lane } : {}),
      },
      body: JSON.stringify(anthropicClient.body(ask)),
    }).then((res) => anthropicClient.read(res, stream));
  }

  it("answers each lane from its own script, in whatever order the lanes ask", async () => {
    laned.lane("a").script([{ text: "first of a" }, { text: "second of a" }]);
    laned.lane("b").script([{ text: "only of b" }]);
    laned.script([{ text: "the model's own" }]);
    expect((await ask("b", "b asks")).text).toBe("only of b");
    expect((await ask("a", "a asks", true)).text).toBe("first of a");
    expect((await ask(null, "no lane asks")).text).toBe("the model's own");
    expect((await ask("a", "a asks again")).text).toBe("second of a");
    expect([laned.lane("a").remaining, laned.lane("b").remaining, laned.remaining]).toEqual([0, 0, 0]);
  });

  it("keeps each lane's requests, tool results and last text apart; the model's requests are all of them", async () => {
    laned.lane("a").script([{ text: "a" }]);
    laned.lane("b").script([{ text: "b" }]);
    await ask("a", "from a");
    await ask("b", "from b");
    expect(laned.lane("a").requests.map((r) => r.headers["x-lane"])).toEqual(["a"]);
    expect(laned.lane("a").lastUserText()).toBe("from a");
    expect(laned.lane("b").lastUserText()).toBe("from b");
    expect(laned.requests).toHaveLength(2);
    // A lane first named after its requests came has them.
    expect(laned.lane("b")).toBe(laned.lane("b"));
  });

  it("fails one lane's side requests without touching another's, and resets one lane alone", async () => {
    laned.lane("a").answerSideRequests({ error: { status: 500, message: "a's side fails" } });
    const side = (lane: string) =>
      fetch(`${laned.url}${anthropicClient.path(false)}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-lane": lane },
        body: JSON.stringify(anthropicClient.body({ user: "a title, please", stream: false })),
      });
    expect((await side("a")).status).toBe(500);
    expect((await side("b")).status).toBe(200);
    laned.lane("a").script([{ text: "left over" }]);
    laned.lane("b").script([{ text: "kept" }]);
    laned.lane("a").reset();
    expect([laned.lane("a").remaining, laned.lane("b").remaining]).toEqual([0, 1]);
  });
});
