import { afterEach, describe, expect, it } from "vitest";
import { Limits } from "../../protocol/limits.js";
import { disconnectAll, SessionTunnel } from "./support/fake-host.js";
import { events, hostedSession, liveSession, respond } from "./support/session.js";
import { ADMIN, OTHER } from "./support/tokens.js";

afterEach(disconnectAll);

describe("a droid's caller tool call", () => {
  it("becomes a caller_tool_request event while the owner is subscribed", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1", "send_response", { text: "hello" });
    const request = await s.owner.next("caller_tool_request");
    expect(request).toMatchObject({
      session_id: s.sessionId,
      caller_id: "ant",
      tool: "send_response",
      arguments: { text: "hello" },
    });
    // The request_id is the call id the host sent, so the answer needs no mapping.
    expect(request.request_id).toBe("call-1");
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_request")).toEqual([request]);
    const info = await s.stub.getInfo(ADMIN, null);
    expect(info).toMatchObject({ ok: true, value: { pending_caller_requests: 1 } });
  });

  it("gives each call its own request, named by its call id", async () => {
    const s = await liveSession();
    s.tunnel.call("call-a");
    s.tunnel.call("call-b");
    const a = await s.owner.next("caller_tool_request");
    const b = await s.owner.next("caller_tool_request");
    // Each its own request under its own id; two calls in flight at once may be stored in either order.
    expect([a.request_id, b.request_id].sort()).toEqual(["call-a", "call-b"]);
  });

  it("fails at once with caller_disconnected when the owner is not there", async () => {
    const s = await hostedSession();
    s.tunnel.call("call-1");
    const outcome = await s.tunnel.result("call-1");
    expect(outcome).toMatchObject({ ok: false, error: { reason: "caller_disconnected" } });
    const log = await events(s.sessionId);
    expect(log.events.some((e) => e.type === "caller_tool_request")).toBe(false);
  });

  it("fails with unknown_tool for a tool the caller did not declare", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1", "rm_rf");
    expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "unknown_tool" } });
  });

  it("fails with no_caller when no caller declared tools", async () => {
    const s = await liveSession({ caller: null });
    expect(s.hello.config).toMatchObject({ caller_id: null, tools: [] });
    s.tunnel.call("call-1");
    expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "no_caller" } });
  });
});

describe("caller_tool_response", () => {
  it("relays the owner's result to the host", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    const answered = await respond(s.sessionId, request_id, { result: { status: "sent" } });
    expect(answered).toEqual({ ok: true, value: { request_id, status: "delivered" } });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: { status: "sent" } });
  });

  it("relays an error string as caller_error with that message", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    expect((await respond(s.sessionId, request_id, { error: "printer on fire" })).ok).toBe(true);
    expect(await s.tunnel.result("call-1")).toEqual({
      ok: false,
      error: { reason: "caller_error", message: "printer on fire" },
    });
  });

  it("refuses a second answer with already_answered and relays only the first", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    await respond(s.sessionId, request_id, { result: "first" });
    const second = await respond(s.sessionId, request_id, { result: "second" });
    expect(second).toMatchObject({ ok: false, error: { code: "already_answered" } });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: "first" });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toHaveLength(1);
  });

  it("refuses an unknown request_id with unknown_request", async () => {
    const s = await liveSession();
    const res = await respond(s.sessionId, crypto.randomUUID(), { result: 1 });
    expect(res).toMatchObject({ ok: false, error: { code: "unknown_request" } });
  });

  it("refuses an answer from a token that does not own the session with not_owner", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    const res = await respond(s.sessionId, request_id, { result: "forged" }, OTHER);
    expect(res).toMatchObject({ ok: false, error: { code: "not_owner" } });
    // The owner can still answer: the refused answer did not consume the request.
    expect((await respond(s.sessionId, request_id, { result: "real" })).ok).toBe(true);
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: "real" });
  });

  it("accepts the answer on the owner's WebSocket subscription", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    s.owner.send({ type: "caller_tool_response", request_id, result: { via: "ws" } });
    expect(await s.owner.next("caller_tool_response_result")).toMatchObject({ request_id, ok: true });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: { via: "ws" } });
  });
});

describe("the answer budget", () => {
  it("refuses an answer over the budget with too_large, sends nothing, and keeps the request open", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    // The MCP endpoint accepts bodies up to 4 MiB; an answer may be at most 512 KiB encoded.
    const answered = await respond(s.sessionId, request_id, { result: "x".repeat(Limits.resultBytes) });
    expect(answered).toMatchObject({ ok: false, error: { code: "too_large" } });
    if (answered.ok) throw new Error("expected a refusal");
    expect(answered.error.message).toContain(String(Limits.resultBytes));
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toEqual([]);
    // The caller can still answer within the budget.
    const within = "x".repeat(Limits.resultBytes - 2);
    expect((await respond(s.sessionId, request_id, { result: within })).ok).toBe(true);
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: within });
    expect(s.tunnel.socket.largestFrameBytes).toBeLessThanOrEqual(Limits.frameBytes);
  });
});

describe("a re-sent caller_tool (host reconnect)", () => {
  it("gets the same request, not a second one, and once answered the outcome", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1", "send_response", { n: 1 });
    const { request_id } = await s.owner.next("caller_tool_request");
    expect(request_id).toBe("call-1");

    // The host-agent reconnects and re-sends every call it still waits for.
    const again = await SessionTunnel.open(s.sessionId);
    await again.hello(s.host.hostId);
    expect(await s.tunnel.socket.closed).toBe(4000);
    again.call("call-1", "send_response", { n: 1 });
    await again.barrier();
    expect(again.answers("call-1")).toEqual([]);
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_request")).toHaveLength(1);
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });

    expect(await respond(s.sessionId, request_id, { result: "done" })).toMatchObject({ ok: true });
    expect(await again.result("call-1")).toEqual({ ok: true, result: "done" });
    // Re-sent after the outcome (its answer was lost in another cut): the same outcome at once.
    again.call("call-1", "send_response", { n: 1 });
    expect(await again.result("call-1")).toEqual({ ok: true, result: "done" });
    const after = await events(s.sessionId);
    expect(after.events.filter((e) => e.type === "caller_tool_request")).toHaveLength(1);
    expect(s.owner.received("caller_tool_request")).toHaveLength(1);
  });
});

describe("a call the droid cancels", () => {
  it("fails with caller_tool_failed cancelled, and the caller's later answer is refused", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    s.tunnel.cancel("call-1", "the droid gave up");
    const failed = await s.owner.next("caller_tool_failed");
    expect(failed).toMatchObject({ request_id, tool: "send_response", reason: "cancelled" });
    expect(failed.message).toContain("the droid gave up");
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 0 } });

    const late = await respond(s.sessionId, request_id, { result: "too late" });
    expect(late).toMatchObject({ ok: false, error: { code: "request_cancelled" } });
    // Nobody waits: the session sends the host no answer for a cancelled call.
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toEqual([]);
  });

  it("leaves the other calls alone, and a cancel of a decided call changes nothing", async () => {
    const s = await liveSession();
    s.tunnel.call("keep");
    s.tunnel.call("drop");
    await s.owner.next("caller_tool_request", (e) => e.request_id === "drop");
    s.tunnel.cancel("drop");
    await s.owner.next("caller_tool_failed");
    expect((await respond(s.sessionId, "keep", { result: "kept" })).ok).toBe(true);
    expect(await s.tunnel.result("keep")).toEqual({ ok: true, result: "kept" });
    s.tunnel.cancel("keep");
    await s.tunnel.barrier();
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_failed").map((e) => e.request_id)).toEqual([
      "drop",
    ]);
    expect(await respond(s.sessionId, "keep", { result: "again" })).toMatchObject({
      ok: false,
      error: { code: "already_answered" },
    });
  });
});
