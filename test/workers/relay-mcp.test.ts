import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Limits } from "../../protocol/limits.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize, mcpFetch } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { SseReader } from "./support/sse.js";
import { OTHER_TOKEN } from "./support/tokens.js";

/** The caller tool relay end to end inside workerd: MCP caller, Durable Objects, fake host. */

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const RequestNotification = z.object({
  method: z.literal("notifications/message"),
  params: z.object({
    logger: z.literal("oubliette.caller_tool"),
    data: z.object({
      type: z.literal("caller_tool_request"),
      session_id: z.string(),
      request_id: z.string(),
      tool: z.string(),
      arguments: z.record(z.string(), z.unknown()),
    }),
  }),
});

/** An MCP caller with an open GET stream that spawned a session lending `send_response`. */
async function relay() {
  const host = await FakeHost.connect(uniqueHostId());
  const mcp = await initialize();
  const res = await mcpFetch({ method: "GET", session: mcp });
  const stream = new SseReader(res.body);
  readers.push(stream);
  const spawned = await callTool(mcp, "session", {
    action: "spawn",
    project_id: await createProject(),
    prompt: "use my tool",
    caller_id: "ant",
    caller_tools: [{ name: "send_response", description: "Reply to the user" }],
  });
  const sessionId = z.string().parse(spawned.structuredContent?.session_id);
  const tunnel = await SessionTunnel.open(sessionId);
  const { config } = await tunnel.hello(host.hostId);
  return { mcp, stream, sessionId, tunnel, config };
}

async function nextRequest(stream: SseReader) {
  const event = await stream.next((e) => RequestNotification.safeParse(safeJson(e.data)).success);
  return { id: event.id, ...RequestNotification.parse(JSON.parse(event.data)).params.data };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

describe("the caller tool relay over MCP", () => {
  it("delivers the droid's call to the caller's stream and the caller's answer to the droid", async () => {
    const r = await relay();
    expect(r.config).toMatchObject({ caller_id: "ant", tools: [{ name: "send_response" }] });
    r.tunnel.call("call-1", "send_response", { text: "done" });
    const request = await nextRequest(r.stream);
    expect(request).toMatchObject({
      session_id: r.sessionId,
      request_id: "call-1",
      tool: "send_response",
      arguments: { text: "done" },
    });
    expect(request.id).toMatch(/^\d+$/);

    const answer = await callTool(r.mcp, "caller_tool_response", {
      session_id: r.sessionId,
      request_id: request.request_id,
      result: { content: [{ type: "text", text: "sent" }] },
    });
    expect(answer.structuredContent).toEqual({ request_id: request.request_id, status: "delivered" });
    expect(await r.tunnel.result("call-1")).toEqual({
      ok: true,
      result: { content: [{ type: "text", text: "sent" }] },
    });
  });

  it("answers a second caller_tool_response with isError already_answered", async () => {
    const r = await relay();
    r.tunnel.call("call-1");
    const { request_id } = await nextRequest(r.stream);
    const answer = { session_id: r.sessionId, request_id, error: "no" };
    expect((await callTool(r.mcp, "caller_tool_response", answer)).isError).toBeUndefined();
    const again = await callTool(r.mcp, "caller_tool_response", answer);
    expect(again).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "already_answered" } },
    });
  });

  it("audits the answers it refuses, not each one it delivers (the session keeps those)", async () => {
    const r = await relay();
    r.tunnel.call("call-1");
    const { request_id } = await nextRequest(r.stream);
    const answer = { session_id: r.sessionId, request_id, result: "once" };
    expect((await callTool(r.mcp, "caller_tool_response", answer)).isError).toBeUndefined();
    expect((await callTool(r.mcp, "caller_tool_response", answer)).isError).toBe(true);
    const entries = async () => {
      const listed = await callTool(r.mcp, "audit", { action_prefix: "caller_tool_response" });
      const all = (listed.structuredContent as { entries: { target: string | null; outcome: string }[] })
        .entries;
      return all.filter((e) => e.target === r.sessionId);
    };
    await until(async () => (await entries()).length > 0, "the refused answer's audit entry");
    expect((await entries()).map((e) => e.outcome)).toEqual(["already_answered"]);
  });

  it("refuses an answer from another token's MCP session with isError not_owner", async () => {
    const r = await relay();
    r.tunnel.call("call-1");
    const { request_id } = await nextRequest(r.stream);
    const intruder = await initialize(OTHER_TOKEN);
    const forged = await callTool(
      intruder,
      "caller_tool_response",
      { session_id: r.sessionId, request_id, result: "forged" },
      OTHER_TOKEN,
    );
    expect(forged).toMatchObject({ isError: true, structuredContent: { error: { code: "not_owner" } } });
    await r.tunnel.barrier();
    expect(r.tunnel.answers("call-1")).toEqual([]);
  });

  it("refuses an answer naming another session's request with isError unknown_request", async () => {
    const a = await relay();
    a.tunnel.call("call-a");
    const { request_id } = await nextRequest(a.stream);
    const b = await callTool(a.mcp, "session", {
      action: "spawn",
      project_id: await createProject(),
      caller_id: "ant",
    });
    const otherSession = z.string().parse(b.structuredContent?.session_id);
    const crossed = await callTool(a.mcp, "caller_tool_response", {
      session_id: otherSession,
      request_id,
      result: "wrong session",
    });
    expect(crossed).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "unknown_request" } },
    });
  });
});

describe("caller_tool_response arguments", () => {
  it.each([
    ["both result and error", { result: "yes", error: "no" }, "not both"],
    ["neither result nor error", {}, "give result"],
    ["only a null error", { error: null }, "give result"],
  ])("refuses %s with isError invalid_arguments and keeps the request open", async (_, answer, message) => {
    const r = await relay();
    r.tunnel.call("call-1");
    const { request_id } = await nextRequest(r.stream);
    const refused = await callTool(r.mcp, "caller_tool_response", {
      session_id: r.sessionId,
      request_id,
      ...answer,
    });
    expect(refused).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "invalid_arguments" } },
    });
    expect(refused.content[0]?.text).toContain(message);
    await r.tunnel.barrier();
    expect(r.tunnel.answers("call-1")).toEqual([]);
    const ok = await callTool(r.mcp, "caller_tool_response", {
      session_id: r.sessionId,
      request_id,
      result: 1,
    });
    expect(ok.isError).toBeUndefined();
    expect(await r.tunnel.result("call-1")).toEqual({ ok: true, result: 1 });
  });

  it.each([
    ["a result", { result: { text: "x".repeat(Limits.resultBytes) } }],
    ["an error", { error: "x".repeat(Limits.resultBytes) }],
  ])("refuses %s over the 512 KiB answer budget with isError too_large", async (_, answer) => {
    const r = await relay();
    r.tunnel.call("call-1");
    const { request_id } = await nextRequest(r.stream);
    const refused = await callTool(r.mcp, "caller_tool_response", {
      session_id: r.sessionId,
      request_id,
      ...answer,
    });
    expect(refused).toMatchObject({ isError: true, structuredContent: { error: { code: "too_large" } } });
    expect(refused.content[0]?.text).toContain(String(Limits.resultBytes));
    await r.tunnel.barrier();
    expect(r.tunnel.answers("call-1")).toEqual([]);
  });
});
