import { afterEach, describe, expect, it } from "vitest";
import { MAX_TUNNEL_FRAME_BYTES } from "../../protocol/tunnel.js";
import { disconnectAll } from "./support/fake-host.js";
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
    expect(request.request_id).toMatch(/^[0-9a-f-]{36}$/);
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_request")).toEqual([request]);
    const info = await s.stub.getInfo(ADMIN, null);
    expect(info).toMatchObject({ ok: true, value: { pending_caller_requests: 1 } });
  });

  it("gives each call its own request_id", async () => {
    const s = await liveSession();
    s.tunnel.call("call-a");
    s.tunnel.call("call-b");
    const a = await s.owner.next("caller_tool_request");
    const b = await s.owner.next("caller_tool_request");
    expect(a.request_id).not.toBe(b.request_id);
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
    expect(s.tunnel.socket.received("caller_tool_result")).toHaveLength(1);
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

describe("the tunnel frame cap", () => {
  it("never sends the host a result frame larger than the tunnel accepts", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    // The MCP endpoint accepts bodies up to 4 MiB; the host-agent drops frames over 1 MiB.
    const answered = await respond(s.sessionId, request_id, {
      result: "x".repeat(2 * MAX_TUNNEL_FRAME_BYTES),
    });
    await s.tunnel.barrier();
    expect(s.tunnel.socket.largestFrameBytes).toBeLessThanOrEqual(MAX_TUNNEL_FRAME_BYTES);
    // Either the caller is told at once, or the droid gets a failure it can act on.
    if (answered.ok) {
      expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false });
    } else {
      // Refused: nothing went to the host, and the caller can still answer within the cap.
      expect(s.tunnel.socket.received("caller_tool_result")).toEqual([]);
      expect((await respond(s.sessionId, request_id, { error: "result too large" })).ok).toBe(true);
      expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "caller_error" } });
    }
  });
});

describe("a re-sent caller_tool_call (host reconnect)", () => {
  it("does not create a second request and, once answered, gets the result again", async () => {
    const s = await liveSession();
    s.tunnel.call("call-1", "send_response", { n: 1 });
    const { request_id } = await s.owner.next("caller_tool_request");
    s.tunnel.call("call-1", "send_response", { n: 1 });
    await s.tunnel.barrier();
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_request")).toHaveLength(1);
    expect(s.tunnel.socket.received("caller_tool_result")).toHaveLength(0);

    await respond(s.sessionId, request_id, { result: "done" });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: "done" });
    s.tunnel.call("call-1", "send_response", { n: 1 });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: "done" });
    const after = await events(s.sessionId);
    expect(after.events.filter((e) => e.type === "caller_tool_request")).toHaveLength(1);
  });
});
