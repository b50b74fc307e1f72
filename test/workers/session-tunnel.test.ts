import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { Limits } from "../../protocol/limits.js";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { config } from "../../worker/src/env.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { upgrade } from "./support/frame-socket.js";
import { errorOf } from "./support/rpc-socket.js";
import { events, hostedSession, liveSession, newSessionId, spawn, subscribe } from "./support/session.js";
import { ADMIN, ADMIN_TOKEN, HOST_TOKEN, READER_TOKEN } from "./support/tokens.js";

afterEach(disconnectAll);

describe("who may connect", () => {
  it("requires the host token for a session tunnel", async () => {
    const { sessionId } = await hostedSession();
    expect((await upgrade(`/v1/tunnel/sessions/${sessionId}`, null)).status).toBe(401);
    expect((await upgrade(`/v1/tunnel/sessions/${sessionId}`, ADMIN_TOKEN)).status).toBe(401);
    expect((await upgrade(`/v1/tunnel/sessions/${sessionId}`, HOST_TOKEN)).status).toBe(101);
  });

  it("requires the host token for the host channel", async () => {
    expect((await upgrade("/v1/tunnel/host?host_id=h9", null)).status).toBe(401);
    expect((await upgrade("/v1/tunnel/host?host_id=h9", ADMIN_TOKEN)).status).toBe(401);
  });

  it("requires a caller token for subscribers", async () => {
    const { sessionId } = await hostedSession();
    expect((await upgrade(`/v1/sessions/${sessionId}/ws`, null)).status).toBe(401);
    expect((await upgrade(`/v1/sessions/${sessionId}/ws`, HOST_TOKEN)).status).toBe(401);
    expect((await upgrade(`/v1/sessions/${sessionId}/ws`, READER_TOKEN)).status).toBe(101);
  });

  it("answers 404 for a session that does not exist", async () => {
    const missing = newSessionId();
    expect((await upgrade(`/v1/tunnel/sessions/${missing}`, HOST_TOKEN)).status).toBe(404);
    expect((await upgrade(`/v1/sessions/${missing}/ws`, ADMIN_TOKEN)).status).toBe(404);
    expect((await upgrade("/v1/tunnel/sessions/not-a-session", HOST_TOKEN)).status).toBe(404);
  });
});

describe("the session hello", () => {
  it("answers with the session id, the stored event seq and the caller tools config", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const { sessionId } = await spawn({ callerTimeoutMs: 42_000 });
    const tunnel = await SessionTunnel.open(sessionId);
    expect(await tunnel.hello(host.hostId)).toEqual({
      session_id: sessionId,
      stored_event_seq: 0,
      config: {
        caller_id: "ant",
        tools: [{ name: "send_response", inputSchema: { type: "object" } }],
        timeout_ms: 42_000,
        backstop_ms: 42_000 + config(env).reconnectBudgetMs,
      },
      // What the host's gate needs after a restart: the session's own policies, whether it asks.
      network: { session: [], approvals: "auto" },
    });
  });

  it("refuses another protocol version and closes the tunnel", async () => {
    const s = await hostedSession();
    const tunnel = await SessionTunnel.open(s.sessionId);
    const error = errorOf(await tunnel.helloAnswer(s.host.hostId, 99));
    expect(error).toMatchObject({ code: RpcErrorCode.ServerError, data: { reason: "unsupported_version" } });
    expect(await tunnel.socket.closed).toBe(4002);
  });

  it("refuses a hello for a session that has ended", async () => {
    const s = await hostedSession();
    expect((await s.stub.end(ADMIN, "done")).ok).toBe(true);
    const tunnel = await SessionTunnel.open(s.sessionId);
    const error = errorOf(await tunnel.helloAnswer(s.host.hostId));
    expect(error).toMatchObject({ code: RpcErrorCode.ServerError, data: { reason: "session_ended" } });
  });

  it("replaces an older tunnel once a newer one has said hello", async () => {
    const s = await hostedSession();
    const newer = await SessionTunnel.open(s.sessionId);
    await newer.hello(s.host.hostId);
    expect(await s.tunnel.socket.closed).toBe(4000);
    const owner = await subscribe(s.sessionId);
    newer.call("call-1");
    expect(await owner.next("caller_tool_request")).toMatchObject({ request_id: "call-1" });
  });
});

describe("a tunnel from a host the session is not placed on", () => {
  it("is refused with not_placed and closed, and a call sent on it never reaches the caller", async () => {
    const s = await liveSession();
    const intruder = await SessionTunnel.open(s.sessionId);
    // Hello and a call back to back: the call arrives before the session could close the tunnel.
    const hello = intruder.helloAnswer(uniqueHostId("intruder"));
    intruder.call("stolen", "send_response", { text: "from the wrong host" });
    expect(errorOf(await hello)).toMatchObject({
      code: RpcErrorCode.ServerError,
      data: { reason: "not_placed" },
    });
    expect(await intruder.socket.closed).toBe(4003);
    // If the call was read before the close, it was refused (never a result).
    for (const answer of intruder.answers("stolen")) expect(answer.kind).toBe("error");

    // The placed host's tunnel is untouched and still relays: the refusal above was not a fluke.
    s.tunnel.call("real");
    expect(await s.owner.next("caller_tool_request")).toMatchObject({ request_id: "real" });
    const log = await events(s.sessionId);
    expect(log.events.filter((e) => e.type === "caller_tool_request").map((e) => e.request_id)).toEqual([
      "real",
    ]);
    expect(s.owner.received("caller_tool_request").map((e) => e.request_id)).toEqual(["real"]);
  });
});

describe("bad messages", () => {
  const call = (params: unknown, id = "c1") =>
    JSON.stringify({ jsonrpc: "2.0", id, method: TunnelMethod.callerTool, params });
  const good = { call_id: "c1", tool: "send_response", arguments: {} };

  it.each([
    ["not JSON", "{oops", null, RpcErrorCode.ParseError, "invalid JSON"],
    [
      "not a JSON-RPC message",
      JSON.stringify({ type: "launch_missiles" }),
      null,
      RpcErrorCode.InvalidRequest,
      "not a JSON-RPC message",
    ],
    [
      "a batch",
      JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "x" }]),
      null,
      RpcErrorCode.InvalidRequest,
      "batches",
    ],
    [
      "oversized",
      call({ ...good, arguments: { x: "y".repeat(Limits.frameBytes) } }),
      null,
      RpcErrorCode.InvalidRequest,
      "exceeds",
    ],
    [
      "too deep",
      call({ ...good, arguments: { x: JSON.parse(`${"[".repeat(100)}${"]".repeat(100)}`) } }),
      null,
      RpcErrorCode.InvalidRequest,
      "deeper",
    ],
    ["a request before session_hello", call(good), "c1", RpcErrorCode.Unauthenticated, "session_hello first"],
  ])("answers %s with an error and keeps the tunnel usable", async (_, frame, id, code, message) => {
    const s = await hostedSession();
    const tunnel = await SessionTunnel.open(s.sessionId);
    tunnel.socket.send(frame);
    const error = errorOf(await tunnel.socket.answer(id));
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
    const owner = await subscribe(s.sessionId);
    await tunnel.hello(s.host.hostId);
    tunnel.call("after-error");
    expect(await owner.next("caller_tool_request")).toMatchObject({ request_id: "after-error" });
  });

  it.each([
    [
      "an unknown method",
      JSON.stringify({ jsonrpc: "2.0", id: "u1", method: "launch_missiles" }),
      "u1",
      RpcErrorCode.MethodNotFound,
      "launch_missiles",
    ],
    ["params of the wrong shape", call({ call_id: "c1" }), "c1", RpcErrorCode.InvalidParams, "tool"],
    [
      "a caller_tool whose id is not its call_id",
      call(good, "other-id"),
      "other-id",
      RpcErrorCode.InvalidRequest,
      "call_id",
    ],
  ])("answers %s after the hello with an error naming it", async (_, frame, id, code, message) => {
    const s = await liveSession();
    s.tunnel.socket.send(frame);
    const error = errorOf(await s.tunnel.socket.answer(id));
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
    s.tunnel.call("after-error");
    expect(await s.owner.next("caller_tool_request")).toMatchObject({ request_id: "after-error" });
    expect(s.owner.received("caller_tool_request")).toHaveLength(1);
  });

  it("measures the size cap in bytes, not characters", async () => {
    const s = await hostedSession();
    // Two UTF-8 bytes per character: within the cap in characters, over it in bytes.
    const text = "é".repeat(Limits.frameBytes / 2 + 1000);
    s.tunnel.socket.send(call({ ...good, arguments: { text } }));
    const error = errorOf(await s.tunnel.socket.answer(null));
    expect(error).toMatchObject({
      code: RpcErrorCode.InvalidRequest,
      message: expect.stringContaining("exceeds"),
    });
  });

  it("answers a binary frame with an error", async () => {
    const s = await hostedSession();
    s.tunnel.socket.send(new TextEncoder().encode(call(good)));
    expect(errorOf(await s.tunnel.socket.answer(null))).toMatchObject({ code: RpcErrorCode.InvalidRequest });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("c1")).toEqual([]);
  });
});
