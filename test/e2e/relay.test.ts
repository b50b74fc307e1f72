/**
 * The caller tool relay end to end (REQ-CTR-001..005): the official MCP SDK client as the
 * caller, the Worker under wrangler dev, a host-agent with the Docker runtime, and the scripted
 * droid + container-client inside a real container.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { endSession, runStep, runSteps, SEND_RESPONSE, spawnDroid, text } from "./support.js";

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

let stack: TestStack;
let caller: TestCaller;
let sessionId: string;
/** How the caller answers, per test. */
let answer: (request: RequestEvent) => { result: unknown } | { error: string } | "ignore" = () => "ignore";

beforeAll(async () => {
  stack = await TestStack.start();
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  caller.answerWith((request) => answer(request));
  sessionId = await spawnDroid(caller, {
    tools: [SEND_RESPONSE, { name: "get_memory", description: "Retrieve stored memories" }],
  });
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

const requestsFor = (tool: string) =>
  caller.events.filter(
    (e): e is RequestEvent =>
      e.type === "caller_tool_request" && e.session_id === sessionId && e.tool === tool,
  );

describe("REQ-CTR-001/003/004: the droid calls a caller tool", () => {
  it("relays the call as a caller_tool_request event and the caller's result back to the droid", async () => {
    answer = (request) => ({ result: { status: "sent", echo: request.arguments } });
    const out = await runStep(caller, sessionId, {
      op: "call",
      name: "ant_send_response",
      arguments: { message: "hi" },
    });
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ status: "sent", echo: { message: "hi" } });

    const [request] = requestsFor("send_response").slice(-1);
    expect(request).toMatchObject({
      type: "caller_tool_request",
      session_id: sessionId,
      caller_id: "ant",
      tool: "send_response",
      arguments: { message: "hi" },
    });
    expect(request?.request_id).toMatch(/^[0-9a-f-]{36}$/);
    const index = caller.events.indexOf(request as SessionEvent);
    expect(caller.loggers[index]).toBe("oubliette.caller_tool");
  });

  it("gives every request a unique request_id", async () => {
    answer = () => ({ result: "ok" });
    await runSteps(caller, sessionId, [
      {
        op: "parallel",
        steps: [1, 2, 3].map((n) => ({
          op: "call",
          id: `u${n}`,
          name: "ant_send_response",
          arguments: { message: `${n}` },
        })),
      },
    ]);
    const ids = requestsFor("send_response").map((r) => r.request_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(4);
  });

  it("returns a caller's error to the droid as an isError result with the caller's message", async () => {
    answer = () => ({ error: "recipient not found" });
    const out = await runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} });
    expect(out.is_error).toBe(true);
    expect(text(out)).toContain("recipient not found");
  });

  it("passes an MCP CallToolResult from the caller through unchanged", async () => {
    answer = () => ({ result: { content: [{ type: "text", text: "memory: likes tea" }] } });
    const out = await runStep(caller, sessionId, { op: "call", name: "ant_get_memory", arguments: {} });
    expect(out.is_error).toBe(false);
    expect(out.content).toEqual([{ type: "text", text: "memory: likes tea" }]);
  });
});

describe("REQ-CTR-002: dynamic tool registration", () => {
  it("lists caller tools with their input schema, defaulting to an object schema", async () => {
    const out = await runStep(caller, sessionId, { op: "list_tools" });
    const tools = out.tools as { name: string; inputSchema: unknown; description?: string }[];
    expect(tools.find((t) => t.name === "ant_send_response")).toMatchObject({
      description: "Send message",
      inputSchema: { type: "object", properties: { message: { type: "string" } } },
    });
    expect(tools.find((t) => t.name === "ant_get_memory")?.inputSchema).toEqual({ type: "object" });
  });

  it("accepts the declaration inside context (the seed's form)", async () => {
    const other = await spawnDroid(caller, { callerId: "ctx", inContext: true });
    const out = await runStep(caller, other, { op: "list_tools" });
    expect((out.tools as { name: string }[]).map((t) => t.name)).toContain("ctx_send_response");
    await endSession(caller, other);
  });
});

describe("REQ-CTR-005: the container socket", () => {
  it("answers a raw caller_tool request on the socket with the caller's result", async () => {
    answer = (request) => ({ result: { got: request.arguments } });
    const out = await runStep(caller, sessionId, {
      op: "socket",
      lines: [
        {
          jsonrpc: "2.0",
          id: 7,
          method: "caller_tool",
          params: { tool: "send_response", arguments: { x: 1 } },
        },
      ],
      expect: 3,
    });
    const received = out.received as Record<string, unknown>[];
    expect(received).toContainEqual(
      expect.objectContaining({ id: "hello", result: expect.objectContaining({ session_id: sessionId }) }),
    );
    expect(received).toContainEqual(expect.objectContaining({ method: "caller_tools_config" }));
    expect(received).toContainEqual({ jsonrpc: "2.0", id: 7, result: { got: { x: 1 } } });
  });
});

describe("answers that must be refused", () => {
  it("refuses a second answer to the same request_id", async () => {
    answer = () => ({ result: "first" });
    await runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} });
    const [request] = requestsFor("send_response").slice(-1);
    const second = await caller.respond(sessionId, request?.request_id ?? "", { result: "second" });
    expect(second.isError).toBe(true);
    expect(JSON.stringify(second.content)).toContain("already_answered");
  });

  it("refuses an unknown request_id and logs a warning", async () => {
    const reply = await caller.respond(sessionId, "00000000-0000-4000-8000-000000000000", { result: 1 });
    expect(reply.isError).toBe(true);
    expect(JSON.stringify(reply.content)).toContain("unknown_request");
    await expect
      .poll(async () => readFile(stack.worker.logFile, "utf8"), { timeout: 5_000 })
      .toMatch(/"level":"warn"[^\n]*unknown request_id[^\n]*00000000-0000-4000-8000-000000000000/);
  });

  it("refuses an answer from a token that does not own the session", async () => {
    answer = () => "ignore";
    const before = caller.events.length;
    const pending = runStep(caller, sessionId, {
      op: "call",
      id: "owned",
      name: "ant_send_response",
      arguments: {},
    });
    const request = (await caller.waitFor(
      (e) =>
        e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
    )) as RequestEvent;
    const intruder = await TestCaller.connect(stack.mcpUrl, stack.otherToken, "intruder");
    try {
      const reply = await intruder.respond(sessionId, request.request_id, { result: "hijacked" });
      expect(reply.isError).toBe(true);
      expect(JSON.stringify(reply.content)).toContain("not_owner");
    } finally {
      await intruder.close();
    }
    await caller.respond(sessionId, request.request_id, { result: "from the owner" });
    const out = await pending;
    expect(text(out)).toBe("from the owner");
  });
});

describe("concurrency and re-declaration", () => {
  it("routes 50 concurrent calls answered in reverse order to the calls that asked", async () => {
    const held: RequestEvent[] = [];
    answer = (request) => {
      held.push(request);
      if (held.length === 50) {
        for (const r of [...held].reverse())
          void caller.respond(r.session_id, r.request_id, { result: { n: r.arguments.n } });
      }
      return "ignore";
    };
    const steps = Array.from({ length: 50 }, (_, n) => ({
      op: "call",
      id: `p${n}`,
      name: "ant_send_response",
      arguments: { n },
    }));
    const outputs = (await runSteps(caller, sessionId, [{ op: "parallel", steps }])).filter(
      (d) => d.op === "call",
    );
    expect(outputs).toHaveLength(50);
    for (const out of outputs) {
      expect(out.is_error).toBe(false);
      expect(JSON.parse(text(out))).toEqual({ n: Number(String(out.id).slice(1)) });
    }
  });

  it("shows the droid the new tool list when the caller re-declares its tools", async () => {
    await caller.ok("session", {
      action: "message",
      session_id: sessionId,
      caller_id: "ant",
      caller_tools: [
        { name: "remember", inputSchema: { type: "object", properties: { fact: { type: "string" } } } },
      ],
    });
    const waited = await runStep(caller, sessionId, {
      op: "wait_tool",
      name: "ant_remember",
      timeout_ms: 20_000,
    });
    expect(waited.found).toBe(true);
    const listed = await runStep(caller, sessionId, { op: "list_tools" });
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(["ant_remember"]);
  });
});

describe("REQ-CTR-001: timeout", () => {
  it("gives the droid a timeout error when the caller does not answer within the session's deadline", async () => {
    const short = await spawnDroid(caller, { timeoutSeconds: 2 });
    answer = () => "ignore";
    const out = await runStep(caller, short, { op: "call", name: "ant_send_response", arguments: {} });
    expect(out.is_error).toBe(true);
    expect(text(out)).toMatch(/did not answer send_response within 2 s/);
    expect(out.ms).toBeGreaterThanOrEqual(1_900);
    const failed = caller.events.find((e) => e.type === "caller_tool_failed" && e.session_id === short);
    expect(failed).toMatchObject({ reason: "timeout", tool: "send_response" });
    const late = await caller.respond(short, (failed as { request_id: string }).request_id, {
      result: "too late",
    });
    expect(JSON.stringify(late.content)).toContain("request_expired");
    await endSession(caller, short);
  });
});
