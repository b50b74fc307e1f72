/**
 * MCP 2026-07-28 push for stateless callers: droid sessions as resources
 * (`oubliette://sessions/{session_id}`: templates, list, read with SEP-2164 errors) and
 * `subscriptions/listen`, which relays each event of the sessions followed as
 * `notifications/resources/updated` — acknowledged first, tagged, filtered, resumable with
 * `?since=`, counted as the owner's presence, cut off on revocation, and alongside a 2025
 * caller's GET stream.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize, mcpFetch } from "./support/mcp.js";
import { mcpSpawned, okResult } from "./support/mcp-spawn.js";
import { modernFetch, modernRpc } from "./support/modern.js";
import { createProject } from "./support/projects.js";
import { events, newSessionId, sessionStub } from "./support/session.js";
import { SseReader } from "./support/sse.js";
import { ADMIN, GRACE_MS, KEEPALIVE_MS } from "./support/tokens.js";

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const uriOf = (sessionId: string) => `oubliette://sessions/${sessionId}`;
const PER_TOKEN = { ttlMs: 0, cacheScope: "private" };

const ToolResultSchema = z.looseObject({
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
});

const AckSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.literal("notifications/subscriptions/acknowledged"),
  params: z.object({
    _meta: z.object({ [SUBSCRIPTION_ID]: z.union([z.string(), z.number()]) }),
    notifications: z.record(z.string(), z.unknown()),
  }),
});

const UpdateSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.literal("notifications/resources/updated"),
  params: z.object({
    uri: z.string(),
    _meta: z.object({
      [SUBSCRIPTION_ID]: z.union([z.string(), z.number()]),
      "oubliette/event": z.looseObject({ type: z.string(), index: z.number(), session_id: z.string() }),
      "oubliette/index": z.number(),
    }),
  }),
});
type Update = z.infer<typeof UpdateSchema>;

/** A token minted by the admin (through a 2025 session) with `scope`. */
async function mint(scope: string) {
  const admin = await initialize();
  const created = okResult(
    await callTool(admin, "token", { action: "create", name: `listen ${scope}`, scope }),
  );
  return { admin, ...z.object({ token: z.string(), token_id: z.string() }).parse(created) };
}

/**
 * A session spawned by a stateless `tools/call` on a fresh fake host, which then holds its
 * tunnel (so the droid's calls and events can be driven).
 */
async function modernSession(extra: Record<string, unknown> = {}, token?: string) {
  const host = await FakeHost.connect(uniqueHostId("listen"));
  const projectId = await createProject();
  const body = await modernRpc(
    "tools/call",
    {
      name: "session",
      arguments: {
        action: "spawn",
        project_id: projectId,
        caller_id: "ant",
        caller_tools: [{ name: "send_response", inputSchema: { type: "object" } }],
        ...extra,
      },
    },
    { headers: { "mcp-param-project-id": projectId }, ...(token ? { token } : {}) },
  );
  const sessionId = z.string().parse(ToolResultSchema.parse(body.result).structuredContent?.session_id);
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(host.hostId);
  return { host, projectId, sessionId, tunnel, uri: uriOf(sessionId) };
}

/** Opens a listen stream; returns its reader (already holding the ack) and the ack. */
async function listen(
  notifications: Record<string, unknown>,
  options: { id?: string | number; token?: string } = {},
) {
  const res = await modernFetch("subscriptions/listen", { notifications }, options);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const reader = new SseReader(res.body);
  readers.push(reader);
  const first = await reader.next();
  expect(reader.all[0]).toBe(first);
  return { reader, ack: AckSchema.parse(JSON.parse(first.data)) };
}

/** The next session update on a listen stream (whose event passes `where`). */
async function nextUpdate(reader: SseReader, where: (u: Update) => boolean = () => true, timeoutMs = 3000) {
  const { value } = await reader.nextJson((v) => {
    const parsed = UpdateSchema.safeParse(v);
    return parsed.success && where(parsed.data);
  }, timeoutMs);
  return UpdateSchema.parse(value);
}

/** Every session update the stream has carried so far. */
function updates(reader: SseReader): Update[] {
  return reader.all.flatMap((e) => {
    const parsed = e.data === "" ? null : UpdateSchema.safeParse(JSON.parse(e.data));
    return parsed?.success ? [parsed.data] : [];
  });
}

/** `resources/list` through every page. */
async function listAll(token?: string) {
  const resources: { uri: string }[] = [];
  let cursor: string | undefined;
  do {
    const body = await modernRpc("resources/list", cursor ? { cursor } : {}, token ? { token } : {});
    expect(body.result).toMatchObject({ resultType: "complete", ...PER_TOKEN });
    const page = z
      .object({ resources: z.array(z.looseObject({ uri: z.string() })), nextCursor: z.string().optional() })
      .parse(body.result);
    resources.push(...page.resources);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return resources.map((r) => r.uri);
}

describe("session resources", () => {
  it("are declared by server/discover, with subscriptions", async () => {
    const body = await modernRpc("server/discover");
    expect(body.result?.capabilities).toMatchObject({ tools: {}, resources: { subscribe: true } });
  });

  it("have one template, private and never fresh", async () => {
    const body = await modernRpc("resources/templates/list");
    expect(body.result).toMatchObject({
      resultType: "complete",
      resourceTemplates: [{ uriTemplate: "oubliette://sessions/{session_id}", mimeType: "application/json" }],
      ...PER_TOKEN,
    });
  });

  it("list the live sessions this token may read, and no others", async () => {
    const a = await modernSession();
    const b = await modernSession();
    const scoped = await mint(`project:${b.projectId}`);
    const all = await listAll();
    expect(all).toEqual(expect.arrayContaining([a.uri, b.uri]));
    expect(await listAll(scoped.token)).toEqual([b.uri]);
    await sessionStub(b.sessionId).end(ADMIN, "done");
    await vi.waitFor(async () => expect(await listAll(scoped.token)).toEqual([]));
  });

  it("read as the session's state with its open caller requests (session get)", async () => {
    const s = await mcpSpawned();
    s.tunnel.call("call-1", "send_response", { text: "hi" });
    await s.tunnel.barrier();
    const uri = uriOf(s.sessionId);
    const body = await modernRpc("resources/read", { uri });
    expect(body.result).toMatchObject({ resultType: "complete", ...PER_TOKEN });
    const contents = z
      .array(z.object({ uri: z.string(), mimeType: z.string(), text: z.string() }))
      .length(1)
      .parse(body.result?.contents);
    expect(contents[0]).toMatchObject({ uri, mimeType: "application/json" });
    expect(JSON.parse(contents[0]?.text ?? "")).toMatchObject({
      session_id: s.sessionId,
      caller_id: "ant",
      pending_caller_requests: 1,
      open_requests: [{ request_id: "call-1", tool: "send_response", arguments: { text: "hi" } }],
    });
    // A subscription's URI (with ?since=) reads the same session.
    const resumable = `${uri}?since=3`;
    const again = await modernRpc("resources/read", { uri: resumable });
    expect(again.result?.contents).toMatchObject([{ uri: resumable, mimeType: "application/json" }]);
  });

  it("answer -32602 Resource not found with data.uri for what this token cannot read (HTTP 200)", async () => {
    const mine = await modernSession();
    const scoped = await mint(`project:${await createProject()}`);
    const cases: [string, string | undefined][] = [
      [uriOf(newSessionId()), undefined],
      ["oubliette://sessions/not-a-session", undefined],
      [`${uriOf(newSessionId())}/events`, undefined],
      ["file:///etc/passwd", undefined],
      [mine.uri, scoped.token],
    ];
    for (const [uri, token] of cases) {
      const body = await modernRpc("resources/read", { uri }, token ? { token } : {});
      expect(body.result, uri).toBeUndefined();
      expect(body.error, uri).toEqual({
        code: McpErrorCode.invalidParams,
        message: "Resource not found",
        data: { uri },
      });
    }
    // The owner's token reads it; Mcp-Name must mirror the uri.
    expect((await modernRpc("resources/read", { uri: mine.uri })).result).toBeDefined();
    const res = await modernFetch("resources/read", { uri: mine.uri }, { headers: { "mcp-name": "x" } });
    expect(res.status).toBe(400);
  });
});

describe("subscriptions/listen", () => {
  it("acknowledges first, with the listen id and only the session URIs it honours", async () => {
    const mine = await modernSession();
    const theirs = await modernSession();
    const scoped = await mint(`project:${mine.projectId}`);
    const asked = [
      mine.uri,
      theirs.uri,
      uriOf(newSessionId()),
      "oubliette://sessions/nope",
      "file:///x",
      mine.uri,
    ];
    const { reader, ack } = await listen(
      { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: asked },
      { id: "listen-1", token: scoped.token },
    );
    expect(ack.params).toEqual({
      _meta: { [SUBSCRIPTION_ID]: "listen-1" },
      notifications: { resourceSubscriptions: [mine.uri] },
    });
    // Every message after it is tagged, and only for the session honoured.
    await nextUpdate(reader, (u) => u.params._meta["oubliette/event"].type === "session_started");
    for (const u of updates(reader)) {
      expect(u.params.uri).toBe(mine.uri);
      expect(u.params._meta[SUBSCRIPTION_ID]).toBe("listen-1");
    }
  });

  it("refuses params without a notifications filter with -32602 as JSON", async () => {
    const body = await modernRpc("subscriptions/listen", {});
    expect(body.error?.code).toBe(McpErrorCode.invalidParams);
  });

  it("relays a droid's caller_tool_request; a stateless caller_tool_response reaches the droid", async () => {
    const s = await modernSession();
    const { reader } = await listen({ resourceSubscriptions: [s.uri] }, { id: 7 });
    s.tunnel.call("call-1", "send_response", { text: "hello" });
    const update = await nextUpdate(
      reader,
      (u) => u.params._meta["oubliette/event"].type === "caller_tool_request",
    );
    const event = update.params._meta["oubliette/event"];
    expect(update.params).toMatchObject({ uri: s.uri, _meta: { [SUBSCRIPTION_ID]: 7 } });
    expect(event).toMatchObject({
      session_id: s.sessionId,
      request_id: "call-1",
      tool: "send_response",
      arguments: { text: "hello" },
    });
    expect(update.params._meta["oubliette/index"]).toBe(event.index);

    const answered = await modernRpc("tools/call", {
      name: "caller_tool_response",
      arguments: { session_id: s.sessionId, request_id: "call-1", result: { sent: true } },
    });
    expect(ToolResultSchema.parse(answered.result).structuredContent).toEqual({
      request_id: "call-1",
      status: "delivered",
    });
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: { sent: true } });
  });

  it("resumes with ?since=: the events missed, nothing lost and nothing twice", async () => {
    const s = await modernSession();
    const first = await listen({ resourceSubscriptions: [s.uri] });
    await s.tunnel.events(
      { seq: 1, type: "droid_log", text: "one" },
      { seq: 2, type: "droid_log", text: "two" },
    );
    await nextUpdate(first.reader, (u) => u.params._meta["oubliette/event"].text === "two");
    const seen = updates(first.reader).map((u) => u.params._meta["oubliette/index"]);
    await first.reader.cancel();

    await s.tunnel.events(
      { seq: 3, type: "droid_log", text: "three" },
      { seq: 4, type: "droid_log", text: "four" },
    );
    s.tunnel.call("call-1");
    await s.tunnel.barrier();
    const since = Math.max(...seen) + 1;
    const resumed = `${s.uri}?since=${since}`;
    const second = await listen({ resourceSubscriptions: [resumed] });
    expect(second.ack.params.notifications).toEqual({ resourceSubscriptions: [resumed] });
    await nextUpdate(second.reader, (u) => u.params._meta["oubliette/event"].type === "caller_tool_request");
    await sleep(KEEPALIVE_MS);
    const again = updates(second.reader);
    for (const u of again) expect(u.params.uri).toBe(resumed);

    const log = (await events(s.sessionId)).events.map((e) => e.index);
    const indexes = [...seen, ...again.map((u) => u.params._meta["oubliette/index"])];
    expect(indexes).toEqual(log);
    expect(log.length).toBeGreaterThanOrEqual(seen.length + 3);
  });

  it("honours the filter: list changes are never sent, so asking only for them gets an empty ack and silence", async () => {
    const s = await modernSession();
    const { reader, ack } = await listen({ toolsListChanged: true, promptsListChanged: true });
    expect(ack.params.notifications).toEqual({});
    await s.tunnel.events({ seq: 1, type: "droid_log", text: "not for this listener" });
    await modernRpc("tools/call", { name: "project", arguments: { action: "list" } });
    await sleep(KEEPALIVE_MS * 1.5);
    expect(reader.all).toHaveLength(1);
    expect(reader.comments).toBeGreaterThan(0);
  });

  it("counts as the owner's presence for a caller_presence stream session, until it is dropped", async () => {
    const s = await modernSession({ caller_presence: "stream" });
    // Nobody listens: the droid's call fails at once.
    s.tunnel.call("call-0");
    expect(await s.tunnel.result("call-0")).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });

    const { reader } = await listen({ resourceSubscriptions: [s.uri] });
    s.tunnel.call("call-1", "send_response", { n: 1 });
    await nextUpdate(reader, (u) => u.params._meta["oubliette/event"].request_id === "call-1");
    await sleep(GRACE_MS * 3);
    expect(s.tunnel.answers("call-1")).toEqual([]);

    await reader.cancel();
    const gone = Date.now();
    expect(await s.tunnel.result("call-1", 8_000)).toMatchObject({
      ok: false,
      error: { reason: "caller_disconnected" },
    });
    expect(Date.now() - gone).toBeLessThan(2 * KEEPALIVE_MS + GRACE_MS + 1_500);
  }, 15_000);

  it("closes the stream when its token is revoked", async () => {
    const s = await modernSession();
    const { admin, token, token_id } = await mint(`project:${s.projectId}`);
    const { reader, ack } = await listen({ resourceSubscriptions: [s.uri] }, { token });
    expect(ack.params.notifications).toEqual({ resourceSubscriptions: [s.uri] });
    okResult(await callTool(admin, "token", { action: "revoke", token_id }));
    const start = Date.now();
    await reader.ended;
    expect(Date.now() - start).toBeLessThan(5_000);
    // No completion result: the subscription did not end gracefully.
    expect(reader.all.some((e) => e.data.includes('"result"'))).toBe(false);
  }, 10_000);

  it("ends with the completion result once the sessions followed have ended", async () => {
    const s = await modernSession();
    const { reader } = await listen({ resourceSubscriptions: [s.uri] }, { id: "done-1" });
    await sessionStub(s.sessionId).end(ADMIN, "finished");
    await nextUpdate(reader, (u) => u.params._meta["oubliette/event"].type === "session_ended");
    const { value } = await reader.nextJson((v) => typeof v === "object" && v !== null && "result" in v);
    expect(value).toMatchObject({
      id: "done-1",
      result: { resultType: "complete", _meta: { [SUBSCRIPTION_ID]: "done-1" } },
    });
    await reader.ended;
  });
});

describe("a 2025 caller and a 2026 listener on the same session", () => {
  it("each see every event exactly once", async () => {
    const s = await mcpSpawned();
    const get = await mcpFetch({ method: "GET", session: s.mcp });
    expect(get.status).toBe(200);
    const legacy = new SseReader(get.body);
    readers.push(legacy);
    await legacy.next((e) => e.retry !== null);
    const { reader: modern } = await listen({ resourceSubscriptions: [uriOf(s.sessionId)] });
    const from = (await events(s.sessionId)).next_index;

    s.tunnel.call("call-1", "send_response", { n: 1 });
    await s.tunnel.events({ seq: 1, type: "droid_log", text: "a" }, { seq: 2, type: "droid_log", text: "b" });
    s.tunnel.call("call-2", "send_response", { n: 2 });
    await s.tunnel.barrier();
    const to = (await events(s.sessionId)).next_index;
    expect(to - from).toBeGreaterThanOrEqual(4);

    await nextUpdate(modern, (u) => u.params._meta["oubliette/index"] === to - 1);
    await legacy.nextJson(
      (v) => (v as { params?: { data?: { index?: number } } }).params?.data?.index === to - 1,
    );
    await sleep(KEEPALIVE_MS);
    const expected = Array.from({ length: to - from }, (_, i) => from + i);
    const modernSeen = updates(modern).map((u) => u.params._meta["oubliette/index"]);
    const legacySeen = legacy.all.flatMap((e) => {
      const parsed = e.data === "" ? null : JSON.parse(e.data);
      return parsed?.method === "notifications/message" ? [z.number().parse(parsed.params.data.index)] : [];
    });
    expect(modernSeen.filter((i) => i >= from)).toEqual(expected);
    expect(new Set(modernSeen).size).toBe(modernSeen.length);
    expect(legacySeen.filter((i) => i >= from)).toEqual(expected);
    expect(new Set(legacySeen).size).toBe(legacySeen.length);
  });
});
