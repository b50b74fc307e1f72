import { afterEach, describe, expect, it } from "vitest";
import { MAX_TUNNEL_FRAME_BYTES, TUNNEL_PROTOCOL_VERSION } from "../../protocol/tunnel.js";
import { disconnectAll, FakeHost, SessionTunnel } from "./support/fake-host.js";
import { upgrade } from "./support/frame-socket.js";
import { hostedSession, newSessionId, spawn, subscribe } from "./support/session.js";
import { ADMIN_TOKEN, HOST_TOKEN, READER_TOKEN } from "./support/tokens.js";

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
  it("welcomes the host and sends the caller tools config", async () => {
    await FakeHost.connect("h1");
    const { sessionId } = await spawn({ callerTimeoutMs: 42_000 });
    const tunnel = await SessionTunnel.open(sessionId);
    const { welcome, config } = await tunnel.hello("h1");
    expect(welcome).toEqual({
      type: "session_welcome",
      v: TUNNEL_PROTOCOL_VERSION,
      session_id: sessionId,
      stored_event_seq: 0,
    });
    expect(config).toEqual({
      caller_id: "ant",
      tools: [{ name: "send_response", inputSchema: { type: "object" } }],
      timeout_ms: 42_000,
    });
  });

  it("refuses another protocol version and closes the tunnel", async () => {
    const { sessionId } = await hostedSession();
    const tunnel = await SessionTunnel.open(sessionId);
    tunnel.send({ type: "session_hello", v: 99, host_id: "h1", delivered_message_seq: 0 });
    expect((await tunnel.socket.next("error")).error.code).toBe("unsupported_version");
    expect(await tunnel.socket.closed).toBe(4002);
  });

  it("replaces an older tunnel with a newer one", async () => {
    const s = await hostedSession();
    const newer = await SessionTunnel.open(s.sessionId);
    expect(await s.tunnel.socket.closed).toBe(4000);
    await newer.hello();
    const owner = await subscribe(s.sessionId);
    newer.call("call-1");
    expect(await owner.next("caller_tool_request")).toMatchObject({ tool: "send_response" });
  });
});

describe("bad frames", () => {
  const call = { type: "caller_tool_call", call_id: "c1", tool: "send_response", arguments: {} };

  it.each([
    ["not JSON", "{oops", "invalid JSON"],
    ["the wrong shape", JSON.stringify({ type: "caller_tool_call", call_id: "c1" }), "invalid frame"],
    ["an unknown type", JSON.stringify({ type: "launch_missiles" }), "invalid frame"],
    [
      "oversized",
      JSON.stringify({ ...call, arguments: { x: "y".repeat(MAX_TUNNEL_FRAME_BYTES) } }),
      "too large",
    ],
    ["a frame before session_hello", JSON.stringify(call), "session_hello first"],
  ])("answers %s with an error frame and keeps the tunnel usable", async (_, frame, message) => {
    const { sessionId } = await hostedSession();
    const tunnel = await SessionTunnel.open(sessionId);
    tunnel.send(frame);
    const error = await tunnel.socket.next("error");
    expect(error.error.code).toBe("bad_frame");
    expect(error.error.message).toContain(message);
    const owner = await subscribe(sessionId);
    await tunnel.hello();
    tunnel.call("after-error");
    expect(await owner.next("caller_tool_request")).toMatchObject({ tool: "send_response" });
  });

  it("measures the size cap in bytes, not characters", async () => {
    const s = await hostedSession();
    // Two UTF-8 bytes per character: within the cap in characters, over it in bytes.
    const text = "é".repeat(MAX_TUNNEL_FRAME_BYTES / 2 + 1000);
    s.tunnel.send(JSON.stringify({ ...call, arguments: { text } }));
    const error = await s.tunnel.socket.next("error");
    expect(error.error).toMatchObject({ code: "bad_frame", message: expect.stringContaining("too large") });
  });

  it("answers a binary frame with an error frame", async () => {
    const s = await hostedSession();
    const bytes = new TextEncoder().encode(JSON.stringify({ type: "droid_message_ack", seq: 0 }));
    s.tunnel.send(bytes);
    expect((await s.tunnel.socket.next("error")).error).toMatchObject({ code: "bad_frame" });
    await s.tunnel.barrier();
  });
});
