import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll } from "./support/fake-host.js";
import { BASE } from "./support/frame-socket.js";
import { hostedSession, liveSession, subscribe } from "./support/session.js";
import { SseReader } from "./support/sse.js";
import { ADMIN_TOKEN, OTHER_TOKEN, READER_TOKEN } from "./support/tokens.js";

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

async function openEvents(sessionId: string, token = ADMIN_TOKEN, headers: Record<string, string> = {}) {
  const res = await exports.default.fetch(`${BASE}/v1/sessions/${sessionId}/events`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const reader = new SseReader(res.body);
  readers.push(reader);
  return reader;
}

describe("the WebSocket subscriber", () => {
  it.each([
    ["not JSON", "{nope", "bad_frame"],
    ["the wrong shape", JSON.stringify({ type: "caller_tool_response" }), "bad_frame"],
    [
      // Within the frame cap in characters, over it in bytes.
      "oversized in bytes",
      JSON.stringify({ type: "caller_tool_response", request_id: "r", result: "é".repeat(600_000) }),
      "too_large",
    ],
  ])("answers a frame that is %s with an error and stays open", async (_, frame, code) => {
    const s = await liveSession();
    s.owner.send(frame);
    expect((await s.owner.next("frame_error")).error.code).toBe(code);
    s.tunnel.call("call-1");
    expect(await s.owner.next("caller_tool_request")).toMatchObject({ tool: "send_response" });
  });

  it("refuses an answer from a read-only token (it may not write to the session's project)", async () => {
    const s = await liveSession();
    const reader = await subscribe(s.sessionId, READER_TOKEN);
    s.tunnel.call("call-1");
    const { request_id } = await reader.next("caller_tool_request");
    reader.send({ type: "caller_tool_response", request_id, result: "forged" });
    expect(await reader.next("caller_tool_response_result")).toMatchObject({
      request_id,
      ok: false,
      error: { code: "forbidden" },
    });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toEqual([]);
  });

  it("does not make a non-owner count as the caller", async () => {
    const s = await hostedSession();
    await subscribe(s.sessionId, OTHER_TOKEN);
    s.tunnel.call("call-1");
    expect(await s.tunnel.result("call-1")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
  });
});

describe("the SSE subscriber", () => {
  it("streams every event with its index as the event id", async () => {
    const s = await hostedSession();
    const stream = await openEvents(s.sessionId);
    const backlog = await stream.nextJson();
    expect(backlog.value).toMatchObject({ index: 0, session_id: s.sessionId });
    expect(backlog.id).toBe("0");
    await s.tunnel.events({ seq: 1, type: "droid_log", text: "live" });
    const live = await stream.nextJson((v) => typeof v === "object" && v !== null && "text" in v);
    expect(live.value).toMatchObject({ type: "droid_log", text: "live" });
  });

  it("resumes after Last-Event-ID", async () => {
    const s = await hostedSession();
    await s.tunnel.events({ seq: 1, type: "droid_log", text: "a" });
    const first = await openEvents(s.sessionId);
    const all = [await first.nextJson(), await first.nextJson(), await first.nextJson()];
    const resumed = await openEvents(s.sessionId, ADMIN_TOKEN, { "last-event-id": String(all[1]?.id) });
    const next = await resumed.nextJson();
    expect(next.id).toBe(all[2]?.id);
  });

  it("makes the owner count as the caller while it is open", async () => {
    const s = await hostedSession();
    const stream = await openEvents(s.sessionId);
    s.tunnel.call("call-1", "send_response", { via: "sse" });
    const request = await stream.nextJson(
      (v) => typeof v === "object" && v !== null && "type" in v && v.type === "caller_tool_request",
    );
    expect(request.value).toMatchObject({ tool: "send_response", arguments: { via: "sse" } });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toEqual([]);
  });
});
