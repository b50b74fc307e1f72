/**
 * Callers that are not MCP clients: the session's events over plain SSE (resumable with
 * Last-Event-ID) and over a WebSocket that can also answer caller tool requests.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { readSse, type SseEvent } from "../support/sse-reader.js";
import { TestStack } from "../support/stack.js";
import { runStep, spawnDroid, text } from "./support.js";

let stack: TestStack;
let caller: TestCaller;
let sessionId: string;

beforeAll(async () => {
  stack = await TestStack.start();
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  sessionId = await spawnDroid(caller);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

function openSse(lastEventId?: string) {
  const controller = new AbortController();
  const events: SseEvent[] = [];
  const headers: Record<string, string> = { authorization: `Bearer ${stack.adminToken}` };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  const done = fetch(new URL(`/v1/sessions/${sessionId}/events`, stack.url), {
    headers,
    signal: controller.signal,
  })
    .then((res) => readSse(res, events))
    .catch(() => undefined);
  return { events, close: () => controller.abort(), done };
}

const parsed = (events: SseEvent[]) =>
  events.map((e) => ({ id: e.id, event: JSON.parse(e.data) as SessionEvent }));

it("streams the session's events over SSE, each with its index as the event id, and resumes after Last-Event-ID", async () => {
  const first = openSse();
  await expect.poll(() => first.events.length, { timeout: 10_000 }).toBeGreaterThan(3);
  const seen = parsed(first.events);
  for (const { id, event } of seen) expect(id).toBe(String(event.index));
  expect(seen[0]?.event.index).toBe(0);
  first.close();

  const resumeAfter = seen[2]?.id ?? "2";
  const second = openSse(resumeAfter);
  await expect.poll(() => second.events.length, { timeout: 10_000 }).toBeGreaterThan(0);
  expect(parsed(second.events)[0]?.event.index).toBe(Number(resumeAfter) + 1);
  second.close();
});

it("delivers a caller_tool_request over SSE and takes the answer over the WebSocket", async () => {
  const sse = openSse(String(caller.events.at(-1)?.index ?? 0));
  const ws = new WebSocket(
    new URL(`/v1/sessions/${sessionId}/ws?since_index=1000000`, stack.url.replace("http", "ws")),
    {
      headers: { authorization: `Bearer ${stack.adminToken}` },
    },
  );
  const replies: Record<string, unknown>[] = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as Record<string, unknown>;
    if (frame.type === "caller_tool_request") {
      ws.send(
        JSON.stringify({ type: "caller_tool_response", request_id: frame.request_id, result: { via: "ws" } }),
      );
    } else if (frame.type === "caller_tool_response_result") replies.push(frame);
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  try {
    const out = await runStep(caller, sessionId, {
      op: "call",
      name: "ant_send_response",
      arguments: { message: "hi" },
    });
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ via: "ws" });
    expect(replies).toEqual([expect.objectContaining({ ok: true })]);
    await expect
      .poll(() => parsed(sse.events).some(({ event }) => event.type === "caller_tool_request"), {
        timeout: 5_000,
      })
      .toBe(true);
  } finally {
    ws.close();
    sse.close();
  }
});

it("refuses subscribers without a caller token", async () => {
  const res = await fetch(new URL(`/v1/sessions/${sessionId}/events`, stack.url), {
    headers: { authorization: `Bearer ${stack.hostToken}` },
  });
  expect(res.status).toBe(401);
  await res.body?.cancel();
});
