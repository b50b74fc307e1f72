import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { decodeRecord } from "../../worker/src/objects/stored-record.js";
import { SESSION_RECORD } from "../../worker/src/session/session-record-format.js";
import { freezeClock } from "./support/clock.js";
import { disconnectAll } from "./support/fake-host.js";
import { initialize, mcpFetch } from "./support/mcp.js";
import { mcpSpawned } from "./support/mcp-spawn.js";
import { until } from "./support/poll.js";
import { hostedSession, liveSession, sessionStub } from "./support/session.js";
import { ADMIN, GRACE_MS } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

/** A session whose only sign of its caller is an attached MCP session (no stream opened). */
async function mcpAttachedSession() {
  const mcpSessionId = await initialize();
  const s = await hostedSession({ via: { mcpSessionId, streaming: false } });
  return { ...s, mcpSessionId };
}

/** The session's record as stored (it is private to the object). */
function storedRecord(stub: ReturnType<typeof sessionStub>) {
  return runInDurableObject(stub, (_, state) => {
    const row = state.storage.sql.exec("SELECT v FROM meta WHERE k = 'session'").one();
    return decodeRecord(SESSION_RECORD, String(row.v));
  });
}

/** A call the caller has been asked about (its caller_tool_request is in the event log). */
async function pendingCall(s: Awaited<ReturnType<typeof hostedSession>>, callId: string) {
  s.tunnel.call(callId);
  await s.tunnel.barrier();
  expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });
}

describe("an attached MCP session counts as the caller", () => {
  it("lets a call through while attached, and fails it at once when the MCP session is gone", async () => {
    const s = await mcpAttachedSession();
    await pendingCall(s, "call-1");
    await s.stub.presenceChanged(s.mcpSessionId, "gone");
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });

  it("fails a dropped stream's calls only after the grace period", async () => {
    const s = await mcpAttachedSession();
    const t0 = freezeClock();
    await pendingCall(s, "call-1");
    await s.stub.presenceChanged(s.mcpSessionId, "dropped");
    expect(await runDurableObjectAlarm(s.stub)).toBe(true);
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toEqual([]);

    vi.setSystemTime(t0 + GRACE_MS);
    expect(await runDurableObjectAlarm(s.stub)).toBe(true);
    const outcome = await s.tunnel.result("call-1");
    expect(outcome).toMatchObject({ ok: false, error: { reason: "caller_disconnected" } });
  });

  it("keeps the calls of a stream that comes back within the grace period", async () => {
    const s = await mcpAttachedSession();
    const t0 = freezeClock();
    await pendingCall(s, "call-1");
    await s.stub.presenceChanged(s.mcpSessionId, "dropped");
    vi.setSystemTime(t0 + GRACE_MS / 2);
    await s.stub.presenceChanged(s.mcpSessionId, "live");
    vi.setSystemTime(t0 + GRACE_MS * 4);
    await runDurableObjectAlarm(s.stub);
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });
  });

  it("refuses new calls once the caller's stream has been gone past the grace period", async () => {
    const s = await mcpAttachedSession();
    const t0 = freezeClock();
    await s.stub.presenceChanged(s.mcpSessionId, "dropped");
    vi.setSystemTime(t0 + GRACE_MS);
    s.tunnel.call("call-1");
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });
});

describe("the real MCP path", () => {
  it("DELETE /mcp fails the caller's pending calls with caller_disconnected", async () => {
    const { mcp, sessionId, tunnel } = await mcpSpawned();
    tunnel.call("call-1");
    await tunnel.barrier();
    expect(await sessionStub(sessionId).getInfo(ADMIN, null)).toMatchObject({
      value: { pending_caller_requests: 1 },
    });

    expect((await mcpFetch({ method: "DELETE", session: mcp })).status).toBe(204);
    expect(await tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });
});

describe("a plain WebSocket subscriber counts as the caller", () => {
  it("fails the calls after the grace period once the owner's socket closes", async () => {
    const s = await liveSession();
    const t0 = freezeClock();
    s.tunnel.call("call-1");
    await s.owner.next("caller_tool_request");
    s.owner.close();
    await until(
      async () => (await storedRecord(s.stub)).plainDroppedAt !== null,
      "the session has seen its owner's socket close",
    );
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });
    vi.setSystemTime(t0 + GRACE_MS);
    expect(await runDurableObjectAlarm(s.stub)).toBe(true);
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });
});
