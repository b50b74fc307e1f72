import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { SessionEvent } from "../../protocol/events.js";
import { initialize, mcpFetch, rpc } from "./support/mcp.js";
import { SseReader } from "./support/sse.js";

const NotificationSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.literal("notifications/message"),
  params: z.object({
    level: z.string(),
    logger: z.string(),
    data: z.object({ type: z.string(), index: z.number() }).passthrough(),
  }),
});

function callerToolRequest(index: number, requestId = `req-${index}`): SessionEvent {
  return {
    type: "caller_tool_request",
    session_id: "ses_000000000000000000000001",
    index,
    ts: new Date().toISOString(),
    request_id: requestId,
    caller_id: "ant",
    tool: "send_response",
    arguments: { text: "hi" },
    deadline: new Date(Date.now() + 60_000).toISOString(),
  };
}

function droidLog(index: number): SessionEvent {
  return {
    type: "droid_log",
    session_id: "ses_000000000000000000000001",
    index,
    ts: new Date().toISOString(),
    text: `log ${index}`,
  };
}

function deliver(mcpSession: string, events: SessionEvent[]) {
  return env.MCP_SESSIONS.get(env.MCP_SESSIONS.idFromName(mcpSession)).deliver(events);
}

const readers: SseReader[] = [];
async function openStream(session: string, headers: Record<string, string> = {}) {
  const res = await mcpFetch({ method: "GET", session, headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const reader = new SseReader(res.body);
  readers.push(reader);
  return reader;
}

/** Notifications on the stream, parsed, with their event ids. */
async function nextNotification(reader: SseReader) {
  const event = await reader.next((e) => e.data !== "");
  return { id: event.id, message: NotificationSchema.parse(JSON.parse(event.data)) };
}

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
});

describe("GET /mcp event stream", () => {
  it("refuses a client that does not accept text/event-stream with 406", async () => {
    const session = await initialize();
    const res = await mcpFetch({ method: "GET", session, headers: { accept: "application/json" } });
    expect(res.status).toBe(406);
  });

  it("relays a caller_tool_request as notifications/message on oubliette.caller_tool, with an id", async () => {
    const session = await initialize();
    const stream = await openStream(session);
    expect((await stream.next((e) => e.retry !== null)).retry).toBeGreaterThan(0);
    expect(await deliver(session, [callerToolRequest(7, "req-xyz")])).toEqual({ accepted: true });
    const { id, message } = await nextNotification(stream);
    expect(id).toMatch(/^\d+$/);
    expect(message.params.logger).toBe("oubliette.caller_tool");
    expect(message.params.data).toMatchObject({
      type: "caller_tool_request",
      request_id: "req-xyz",
      tool: "send_response",
      arguments: { text: "hi" },
    });
  });

  it("relays session events on oubliette.session", async () => {
    const session = await initialize();
    const stream = await openStream(session);
    await deliver(session, [droidLog(3)]);
    const { message } = await nextNotification(stream);
    expect(message.params.logger).toBe("oubliette.session");
    expect(message.params.data).toMatchObject({ type: "droid_log", text: "log 3" });
  });

  it("refuses deliveries for a session that never started or has ended", async () => {
    expect(await deliver(crypto.randomUUID(), [droidLog(0)])).toEqual({ accepted: false });
    const session = await initialize();
    await mcpFetch({ method: "DELETE", session });
    expect(await deliver(session, [droidLog(0)])).toEqual({ accepted: false });
  });

  it("replays what was delivered after Last-Event-ID, in order, with the same ids", async () => {
    const session = await initialize();
    const first = await openStream(session);
    await deliver(session, [droidLog(0), callerToolRequest(1), droidLog(2)]);
    const seen = [
      await nextNotification(first),
      await nextNotification(first),
      await nextNotification(first),
    ];
    await first.cancel();
    await deliver(session, [droidLog(3)]);

    const resumed = await openStream(session, { "last-event-id": String(seen[0]?.id) });
    const replayed = [
      await nextNotification(resumed),
      await nextNotification(resumed),
      await nextNotification(resumed),
    ];
    expect(replayed.map((n) => n.message.params.data.index)).toEqual([1, 2, 3]);
    expect(replayed.slice(0, 2).map((n) => n.id)).toEqual([seen[1]?.id, seen[2]?.id]);
  });

  it("replays events delivered while no stream was open", async () => {
    const session = await initialize();
    await deliver(session, [callerToolRequest(0, "while-away")]);
    const stream = await openStream(session, { "last-event-id": "0" });
    const { message } = await nextNotification(stream);
    expect(message.params.data).toMatchObject({ request_id: "while-away" });
  });
});

describe("logging/setLevel", () => {
  it("filters session events below the level but never caller_tool_request", async () => {
    const session = await initialize();
    expect((await rpc(session, "logging/setLevel", { level: "error" })).result).toEqual({});
    await deliver(session, [droidLog(0), callerToolRequest(1, "must-arrive"), droidLog(2)]);
    const stream = await openStream(session, { "last-event-id": "0" });
    const { message } = await nextNotification(stream);
    expect(message.params.data).toMatchObject({ type: "caller_tool_request", request_id: "must-arrive" });
    // The replay is everything stored after id 0; a live event after it proves nothing else was.
    await rpc(session, "logging/setLevel", { level: "debug" });
    await deliver(session, [droidLog(3)]);
    const after = await nextNotification(stream);
    expect(after.message.params.data).toMatchObject({ type: "droid_log", index: 3 });
  });

  it("refuses an unknown level with -32602", async () => {
    const session = await initialize();
    const res = await rpc(session, "logging/setLevel", { level: "loud" });
    expect(res.error?.code).toBe(-32602);
  });
});
