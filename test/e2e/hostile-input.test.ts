/**
 * Oversized and hostile input at every entry, end to end: anything over the size budget gets a
 * clear too_large error where it enters (MCP tools, the container socket), nothing is accepted
 * that a later hop cannot carry, a flooding container cannot starve its host, a host-token holder
 * cannot take over another host's session — and through all of it the host-agent never exits and
 * another session's relay keeps working.
 */
import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { TUNNEL_PROTOCOL_VERSION } from "../../protocol/tunnel.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { runStep, spawnDroid, text } from "./support.js";

let stack: TestStack;
let host: HostAgent;
let caller: TestCaller;
let bystander: string;

beforeAll(async () => {
  stack = await TestStack.start();
  host = await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  caller.answerWith((r) => ({ result: `ok ${String(r.arguments.n)}` }));
  bystander = await spawnDroid(caller);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

function errorOf(result: { structuredContent?: unknown; content?: unknown }): {
  code?: string;
  message?: string;
} {
  return ((result.structuredContent as { error?: { code?: string; message?: string } } | undefined)?.error ??
    {}) as {
    code?: string;
    message?: string;
  };
}

async function bystanderWorks(n: number): Promise<void> {
  const out = await runStep(caller, bystander, { op: "call", name: "ant_send_response", arguments: { n } });
  expect(out.is_error).toBe(false);
  expect(text(out)).toBe(`ok ${n}`);
}

/** `count` tools whose declaration is about `bytes` encoded. */
function tools(count: number, bytes: number) {
  const each = Math.floor(bytes / count) - 80;
  return Array.from({ length: count }, (_, i) => ({
    name: `tool_${i}`,
    inputSchema: { type: "object", description: "d".repeat(each) },
  }));
}

describe("the size budget, checked where input enters", () => {
  it("refuses a ~1 MiB declaration at spawn with too_large, and the host-agent lives on", async () => {
    const result = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "big",
      caller_tools: tools(128, 1_048_530),
    });
    expect(result.isError).toBe(true);
    expect(errorOf(result)).toMatchObject({ code: "too_large", message: expect.stringContaining("262144") });
    expect(host.process.exitCode).toBeNull();
    await bystanderWorks(1);
  });

  it("refuses a prompt of 200,000 × U+0001 (1.2 MB escaped) with too_large", async () => {
    const result = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "p",
      prompt: "\u0001".repeat(200_000),
    });
    expect(errorOf(result)).toMatchObject({
      code: "too_large",
      message: expect.stringMatching(/1200002 bytes/),
    });
  });

  it("refuses re-declaring ~1.5 MiB of tools, and the session is not wedged", async () => {
    const result = await caller.call("session", {
      action: "message",
      session_id: bystander,
      caller_id: "ant",
      caller_tools: tools(128, 1_500_000),
    });
    expect(errorOf(result).code).toBe("too_large");
    await bystanderWorks(2);
  });

  it("refuses ~3 MiB of schemas with too_large, not an internal error", async () => {
    const result = await caller.call("session", {
      action: "message",
      session_id: bystander,
      caller_id: "ant",
      caller_tools: tools(128, 3_000_000),
    });
    expect(errorOf(result).code).toBe("too_large");
  });

  it("fails a droid's call over the arguments budget at once; the caller never sees it", async () => {
    const before = caller.events.length;
    const out = await runStep(caller, bystander, {
      op: "call",
      name: "ant_send_response",
      pad_bytes: 300 * 1024,
    });
    expect(out.is_error).toBe(true);
    expect(text(out)).toMatch(/limit is 262144 bytes/);
    expect(Number(out.ms)).toBeLessThan(5_000);
    // Straight on the socket (past the container-client's own check), the host-agent refuses it too.
    const raw = await runStep(caller, bystander, {
      op: "socket",
      lines: [],
      pad_call: { tool: "send_response", bytes: 600 * 1024 },
      expect: 3,
    });
    const refused = (raw.received as { id?: unknown; error?: { data?: unknown } }[]).find(
      (m) => m.id === "pad",
    );
    expect(refused?.error?.data).toEqual({ reason: "too_large" });
    const requests = caller.events.slice(before).filter((e) => e.type === "caller_tool_request");
    expect(requests).toEqual([]);
  });

  it("refuses a caller's answer over the result budget; a smaller answer still gets through", async () => {
    const sessionId = await spawnDroid(caller);
    caller.answerWith(() => "ignore");
    try {
      const call = runStep(caller, sessionId, {
        op: "call",
        id: "big-answer",
        name: "ant_send_response",
        arguments: {},
      });
      const request = await caller.waitFor(
        (e) => e.type === "caller_tool_request" && e.session_id === sessionId,
      );
      const requestId = (request as { request_id: string }).request_id;
      const big = await caller.respond(sessionId, requestId, { result: "z".repeat(600 * 1024) });
      expect(errorOf(big)).toMatchObject({ code: "too_large", message: expect.stringContaining("524288") });
      const small = await caller.respond(sessionId, requestId, { result: "small enough" });
      expect(small.isError).toBeFalsy();
      expect(text(await call)).toBe("small enough");
    } finally {
      caller.answerWith((r) => ({ result: `ok ${String(r.arguments.n)}` }));
    }
  });
});

describe("hostile input", () => {
  it("refuses an invalid inputSchema, naming the problem, and the droid's tool list keeps working", async () => {
    const result = await caller.call("session", {
      action: "message",
      session_id: bystander,
      caller_id: "ant",
      caller_tools: [{ name: "send_response", inputSchema: { type: "object", properties: "oops" } }],
    });
    expect(errorOf(result)).toMatchObject({
      code: "invalid_arguments",
      message: expect.stringMatching(/inputSchema is not a valid JSON Schema: properties/),
    });
    const listed = await runStep(caller, bystander, { op: "list_tools" });
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain("ant_send_response");
  });

  it("answers tools/call arguments nested 100,000 deep with a clear error", async () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session","arguments":{"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}}}`;
    const res = await fetch(stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${stack.adminToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": caller.transport.sessionId ?? "",
      },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { code: -32600, message: expect.stringMatching(/nested deeper than 64/) },
    });
  });

  it("caps a flooding container's socket connections so its host keeps its file descriptors", async () => {
    const flooder = await spawnDroid(caller);
    const fdsBefore = (await readdir(`/proc/${host.process.pid}/fd`)).length;
    const flood = runStep(caller, flooder, { op: "flood", connections: 3_000, hold_ms: 3_000 }, 60_000);
    await caller.waitForOutput(flooder, () => false, 1_500).catch(() => {});
    const fdsDuring = (await readdir(`/proc/${host.process.pid}/fd`)).length;
    // A new session on the same host starts while the flood holds its connections.
    const other = await spawnDroid(caller);
    const report = await flood;
    expect(report.connected).toBeGreaterThan(0);
    expect(Number(report.still_open)).toBeLessThanOrEqual(64);
    expect(fdsDuring - fdsBefore).toBeLessThan(300);
    expect(other).toMatch(/^ses_/);
    await caller.call("session", { action: "end", session_id: other });
    await caller.call("session", { action: "end", session_id: flooder });
    await bystanderWorks(3);
  }, 90_000);

  it("refuses a session tunnel from a host the session is not placed on; nothing it sends is relayed", async () => {
    const before = caller.events.length;
    const url = new URL(`/v1/tunnel/sessions/${bystander}`, stack.url.replace("http", "ws"));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${stack.hostToken}` } });
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (data) => {
      if (data.toString() !== "pong") frames.push(JSON.parse(data.toString()) as Record<string, unknown>);
    });
    const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: "h",
        method: "session_hello",
        params: { v: TUNNEL_PROTOCOL_VERSION, host_id: "intruder" },
      }),
    );
    ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: "injected-call",
        method: "caller_tool",
        params: { call_id: "injected-call", tool: "send_response", arguments: { n: 666 } },
      }),
    );
    expect(await closed).toBe(4003);
    expect(frames[0]).toMatchObject({ id: "h", error: { data: { reason: "not_placed" } } });
    expect(caller.events.slice(before).some((e) => e.type === "caller_tool_request")).toBe(false);
    await bystanderWorks(4);
  });

  it("never let any of that take the host-agent down", () => {
    expect(host.process.exitCode).toBeNull();
    expect(host.process.signalCode).toBeNull();
  });
});
