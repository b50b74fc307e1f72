import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_EVENT_WAITERS } from "../../worker/src/session/event-waiters.js";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, initializeRequest, mcpFetch, rpcBody, streamedCall } from "./support/mcp.js";
import { mcpSpawned, okResult } from "./support/mcp-spawn.js";
import { events, hostedSession } from "./support/session.js";
import type { SseReader } from "./support/sse.js";
import { ADMIN, KEEPALIVE_MS } from "./support/tokens.js";

/** `session events` with wait_seconds: a caller that sees no notifications polls this way. */

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const PageSchema = z.object({
  events: z.array(z.object({ type: z.string(), index: z.number() }).passthrough()),
  next_index: z.number(),
  status: z.string(),
});

async function nextIndex(mcp: string, sessionId: string): Promise<number> {
  const info = okResult(await callTool(mcp, "session", { action: "get", session_id: sessionId }));
  return z.number().parse(info.next_index);
}

/** `session events` through MCP; answers the page and how long the call took. */
async function poll(mcp: string, sessionId: string, since: number, waitSeconds: number) {
  const started = Date.now();
  const result = await callTool(mcp, "session", {
    action: "events",
    session_id: sessionId,
    since_index: since,
    wait_seconds: waitSeconds,
  });
  return { page: PageSchema.parse(okResult(result)), tookMs: Date.now() - started };
}

/** `session events` whose answer is read as a stream; `answer` matches its response. */
async function rawPoll(mcp: string, args: Record<string, unknown>, meta?: Record<string, unknown>) {
  const call = await streamedCall(mcp, "session", { action: "events", ...args }, meta);
  readers.push(call.stream);
  const answer = () =>
    call.stream.nextJson((value) => z.object({ id: z.literal(call.id) }).safeParse(value).success, 10_000);
  return { ...call, answer };
}
const ProgressSchema = z.object({
  method: z.literal("notifications/progress"),
  params: z.object({
    progressToken: z.string(),
    progress: z.number(),
    total: z.number(),
    message: z.string(),
  }),
});

describe("session events with wait_seconds", () => {
  it("answers at once, as JSON, when an event from since_index on exists", async () => {
    const s = await mcpSpawned();
    const { page, tookMs } = await poll(s.mcp, s.sessionId, 0, 10);
    expect(page.events.length).toBeGreaterThan(0);
    expect(tookMs).toBeLessThan(KEEPALIVE_MS);
  });

  it("answers as soon as an event arrives during the wait", async () => {
    const s = await mcpSpawned();
    const since = await nextIndex(s.mcp, s.sessionId);
    const waiting = poll(s.mcp, s.sessionId, since, 10);
    await new Promise((r) => setTimeout(r, 300));
    await s.tunnel.events({ seq: 1, type: "droid_log", text: "late" });
    const { page, tookMs } = await waiting;
    expect(page.events).toMatchObject([{ type: "droid_log", text: "late", index: since }]);
    expect(page.next_index).toBe(since + 1);
    expect(tookMs).toBeGreaterThanOrEqual(300);
    expect(tookMs).toBeLessThan(5_000);
  });

  it("answers with no events at the deadline", async () => {
    const s = await mcpSpawned();
    const since = await nextIndex(s.mcp, s.sessionId);
    const { page, tookMs } = await poll(s.mcp, s.sessionId, since, 0.4);
    expect(page).toMatchObject({ events: [], next_index: since, status: "starting" });
    expect(tookMs).toBeGreaterThanOrEqual(400);
    expect(tookMs).toBeLessThan(KEEPALIVE_MS + 1_000);
  });

  it("keeps the call alive with notifications/progress on an SSE answer when given a progressToken", async () => {
    const s = await mcpSpawned();
    const since = await nextIndex(s.mcp, s.sessionId);
    const { res, stream, answer } = await rawPoll(
      s.mcp,
      { session_id: s.sessionId, since_index: since, wait_seconds: 2.5 },
      { progressToken: "wait-1" },
    );
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect((await answer()).value).toMatchObject({
      result: { structuredContent: { events: [], next_index: since } },
    });
    const progress = stream.all
      .map((e) => ProgressSchema.safeParse(JSON.parse(e.data)))
      .flatMap((p) => (p.success ? [p.data.params] : []));
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.every((p) => p.progressToken === "wait-1" && p.total === 2.5)).toBe(true);
    const values = progress.map((p) => p.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
  });

  it("keeps an SSE answer alive with comments when no progressToken was given", async () => {
    const s = await mcpSpawned();
    const since = await nextIndex(s.mcp, s.sessionId);
    const { res, stream, answer } = await rawPoll(s.mcp, {
      session_id: s.sessionId,
      since_index: since,
      wait_seconds: 1.5,
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect((await answer()).value).toMatchObject({ result: { structuredContent: { events: [] } } });
    expect(stream.comments).toBeGreaterThanOrEqual(1);
    expect(stream.all.some((e) => e.data.includes("notifications/progress"))).toBe(false);
  });

  it("refuses a wait past 50 seconds", async () => {
    const s = await mcpSpawned();
    const result = await callTool(s.mcp, "session", {
      action: "events",
      session_id: s.sessionId,
      wait_seconds: 51,
    });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "invalid_arguments" } },
    });
  });

  it("lets a bounded number of readers wait at once, and releases them at their deadline", async () => {
    const s = await hostedSession();
    const since = (await events(s.sessionId)).next_index;
    const wait = () => s.stub.readEvents(ADMIN, since, 10, null, 600);
    const waiting = Array.from({ length: MAX_EVENT_WAITERS }, wait);
    await new Promise((r) => setTimeout(r, 100));
    expect(await wait()).toMatchObject({ ok: false, error: { code: "too_many_waiters" } });
    for (const page of await Promise.all(waiting))
      expect(page).toMatchObject({ ok: true, value: { events: [] } });
    expect(await wait()).toMatchObject({ ok: true });
  });
});

describe("the server's instructions", () => {
  it("tell a caller that sees no notifications how to find and answer requests", async () => {
    const res = await mcpFetch({ body: initializeRequest() });
    const { result } = await rpcBody(res);
    const instructions = z.object({ instructions: z.string() }).parse(result).instructions;
    for (const words of ["session events", "wait_seconds", "session pending", "caller_tool_response"])
      expect(instructions).toContain(words);
  });
});
