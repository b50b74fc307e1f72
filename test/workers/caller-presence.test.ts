import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, initialize, mcpFetch, streamedCall } from "./support/mcp.js";
import { mcpSpawned, okResult, pending } from "./support/mcp-spawn.js";
import { events, hostedSession } from "./support/session.js";
import { SseReader } from "./support/sse.js";
import { ADMIN, GRACE_MS, KEEPALIVE_MS, OTHER_TOKEN } from "./support/tokens.js";

/**
 * `caller_presence`: with `stream` a caller's waiting calls fail soon after its last stream goes
 * (today's rule); with `deadline` they wait for an answer until their deadline, whoever is
 * connected. A caller waiting in `session events` counts as present.
 */

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function answer(mcp: string, sessionId: string, requestId: string, result: unknown, token?: string) {
  return callTool(
    mcp,
    "caller_tool_response",
    { session_id: sessionId, request_id: requestId, result },
    token,
  );
}

/** The caller's GET stream, read until the droid's call shows up on it. */
async function streamSeesRequest(mcp: string, call: () => void): Promise<SseReader> {
  const stream = new SseReader((await mcpFetch({ method: "GET", session: mcp })).body);
  readers.push(stream);
  call();
  await stream.next((e) => e.data.includes("caller_tool_request"));
  return stream;
}

describe("caller_presence deadline", () => {
  it("keeps a request after every stream of its caller is gone; a new MCP session answers it", async () => {
    const s = await mcpSpawned({ caller_presence: "deadline" });
    const stream = await streamSeesRequest(s.mcp, () => s.tunnel.call("call-1", "send_response", { n: 1 }));
    await stream.cancel();
    expect((await mcpFetch({ method: "DELETE", session: s.mcp })).status).toBe(204);
    await sleep(GRACE_MS * 3);
    expect(s.tunnel.answers("call-1")).toEqual([]);

    const again = await initialize();
    const listed = await pending(again, s.sessionId);
    expect(listed).toMatchObject({
      caller_presence: "deadline",
      open_requests: [{ request_id: "call-1", arguments: { n: 1 } }],
    });
    expect(okResult(await answer(again, s.sessionId, "call-1", { sent: true }))).toEqual({
      request_id: "call-1",
      status: "delivered",
    });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: { sent: true } });
  });

  it("lets a call wait when no caller is connected at all, until its deadline", async () => {
    const s = await hostedSession({ callerPresence: "deadline", callerTimeoutMs: GRACE_MS * 3 });
    s.tunnel.call("call-1");
    await sleep(GRACE_MS * 2);
    expect(s.tunnel.answers("call-1")).toEqual([]);
    expect(await s.tunnel.result("call-1", 5_000)).toMatchObject({ ok: false, error: { reason: "timeout" } });
  });

  it("is chosen again with session message, by the session's owner only", async () => {
    const s = await mcpSpawned();
    const set = (mcp: string, presence: string, token?: string) =>
      callTool(
        mcp,
        "session",
        { action: "message", session_id: s.sessionId, caller_presence: presence },
        token,
      );
    expect(okResult(await set(s.mcp, "deadline"))).toMatchObject({
      session: { caller_presence: "deadline" },
    });
    const other = await set(await initialize(OTHER_TOKEN), "stream", OTHER_TOKEN);
    expect(other).toMatchObject({ isError: true, structuredContent: { error: { code: "not_owner" } } });

    // Back to stream with nobody there: the waiting call fails.
    s.tunnel.call("call-1");
    await s.tunnel.barrier();
    expect((await mcpFetch({ method: "DELETE", session: s.mcp })).status).toBe(204);
    expect(s.tunnel.answers("call-1")).toEqual([]);
    const back = await s.stub.sendMessage({
      principal: ADMIN,
      message: null,
      caller: null,
      callerPresence: "stream",
      via: null,
    });
    expect(back).toMatchObject({ ok: true, value: { session: { caller_presence: "stream" } } });
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });
});

describe("caller_presence stream (the default)", () => {
  it("fails the request when the caller ends its MCP session; a new MCP session cannot answer it", async () => {
    const s = await mcpSpawned({ caller_presence: "stream" });
    s.tunnel.call("call-1");
    await s.tunnel.barrier();
    expect((await mcpFetch({ method: "DELETE", session: s.mcp })).status).toBe(204);
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
    const late = await answer(await initialize(), s.sessionId, "call-1", "too late");
    expect(late).toMatchObject({ isError: true, structuredContent: { error: { code: "request_expired" } } });
  });

  it("counts a caller waiting in session events as present, until its client goes away", async () => {
    const mcp = await initialize();
    const s = await hostedSession({ via: { mcpSessionId: mcp, streaming: false } });
    s.tunnel.call("call-1");
    await s.tunnel.barrier();
    const since = (await events(s.sessionId)).next_index;
    const { stream: poller } = await streamedCall(
      mcp,
      "session",
      { action: "events", session_id: s.sessionId, since_index: since, wait_seconds: 30 },
      { progressToken: 1 },
    );
    readers.push(poller);
    // The MCP session's stream dropped: only the poller is left.
    await s.stub.presenceChanged(mcp, "dropped");
    await sleep(GRACE_MS * 4);
    expect(s.tunnel.answers("call-1")).toEqual([]);

    await poller.cancel();
    const gone = Date.now();
    expect(await s.tunnel.result("call-1", 5_000)).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
    expect(Date.now() - gone).toBeLessThan(KEEPALIVE_MS + GRACE_MS + 1_500);
  }, 15_000);
});
