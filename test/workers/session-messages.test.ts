import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { config } from "../../worker/src/env.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { ANT, events, hostedSession, liveSession, sessionStub, spawn } from "./support/session.js";
import { ADMIN, OTHER, READER } from "./support/tokens.js";

afterEach(disconnectAll);

describe("messages for the droid", () => {
  it("sends the spawn prompt after the hello, as request msg:1", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const { sessionId } = await spawn({ prompt: "fix the build" });
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello(host.hostId);
    expect(await tunnel.nextMessage()).toEqual({ id: "msg:1", seq: 1, text: "fix the build" });
  });

  it("sends a message at once and re-sends unacknowledged ones after a reconnect", async () => {
    const s = await hostedSession();
    const sent = await s.stub.sendMessage({ principal: ADMIN, message: "one", caller: null, via: null });
    expect(sent).toMatchObject({ ok: true, value: { message_seq: 1 } });
    expect(await s.tunnel.nextMessage()).toMatchObject({ id: "msg:1", seq: 1, text: "one" });
    await s.stub.sendMessage({ principal: ADMIN, message: "two", caller: null, via: null });
    await s.tunnel.nextMessage((m) => m.seq === 2);
    s.tunnel.ackMessage(1);
    await s.tunnel.barrier();

    const again = await SessionTunnel.open(s.sessionId);
    await again.hello(s.host.hostId);
    expect(await again.nextMessage()).toMatchObject({ id: "msg:2", seq: 2, text: "two" });
    await again.barrier();
    expect(again.messages()).toHaveLength(1);
  });

  it("takes messages from another writer of the project, but only the owner declares caller tools", async () => {
    const s = await hostedSession();
    const res = await s.stub.sendMessage({ principal: OTHER, message: "hi", caller: null, via: null });
    expect(res).toMatchObject({ ok: true, value: { message_seq: 1 } });
    const declared = await s.stub.sendMessage({ principal: OTHER, message: null, caller: ANT, via: null });
    expect(declared).toMatchObject({ ok: false, error: { code: "not_owner" } });
  });

  it("refuses messages from a read-only token and from a token of another project", async () => {
    const s = await hostedSession();
    for (const principal of [READER, { kind: "caller" as const, tokenId: "b", scopes: ["project:other"] }]) {
      const res = await s.stub.sendMessage({ principal, message: "hi", caller: null, via: null });
      expect(res).toMatchObject({ ok: false, error: { code: "forbidden" } });
    }
  });

  it("reports a message the host has not confirmed in time, once, and again when it arrives late", async () => {
    const s = await hostedSession();
    await s.stub.sendMessage({ principal: ADMIN, message: "are you there", caller: null, via: null });
    await s.tunnel.nextMessage((m) => m.seq === 1);
    // The host never confirms it (its runner is away, say); time passes beyond the notice delay.
    const stub = sessionStub(s.sessionId);
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec(
        "UPDATE messages SET queued_at = queued_at - ?",
        config(env).messageNoticeMs + 1,
      );
    });
    await runDurableObjectAlarm(stub);
    await runDurableObjectAlarm(stub);
    const undelivered = (await events(s.sessionId)).events.filter((e) => e.type === "message_undelivered");
    expect(undelivered).toHaveLength(1);
    expect(undelivered[0]).toMatchObject({
      seq: 1,
      message: expect.stringMatching(/message 1 has not reached/),
    });
    expect((undelivered[0] as { waited_seconds: number }).waited_seconds).toBeGreaterThanOrEqual(
      Math.floor(config(env).messageNoticeMs / 1000),
    );
    // It was kept: the host confirms it at last, and that is said too.
    s.tunnel.ackMessage(1);
    await s.tunnel.barrier();
    const after = (await events(s.sessionId)).events;
    expect(after.filter((e) => e.type === "message_delivered")).toMatchObject([{ seq: 1 }]);
  });

  it("refuses messages once the session has ended", async () => {
    const s = await hostedSession();
    expect((await s.stub.end(ADMIN, "done")).ok).toBe(true);
    const res = await s.stub.sendMessage({ principal: ADMIN, message: "hi", caller: null, via: null });
    expect(res).toMatchObject({ ok: false, error: { code: "session_ended" } });
  });
});

describe("re-declaring caller tools", () => {
  it("sends a new caller_tools_config to the host and routes calls by the new list", async () => {
    const s = await liveSession();
    const redeclared = await s.stub.sendMessage({
      principal: ADMIN,
      message: null,
      caller: { callerId: "ant", tools: [{ name: "lookup", description: "Look something up" }] },
      via: null,
    });
    expect(redeclared).toMatchObject({ ok: true, value: { session: { caller_tools: ["lookup"] } } });
    expect(await s.tunnel.nextConfig()).toEqual({
      caller_id: "ant",
      tools: [{ name: "lookup", description: "Look something up" }],
      timeout_ms: 60_000,
      backstop_ms: 60_000 + config(env).reconnectBudgetMs,
    });
    expect(
      await s.owner.next(
        "caller_tools_declared",
        (e) => e.tools.length === 1 && e.tools[0]?.name === "lookup",
      ),
    ).toMatchObject({ caller_id: "ant" });

    s.tunnel.call("old", "send_response");
    expect(await s.tunnel.result("old")).toMatchObject({ ok: false, error: { reason: "unknown_tool" } });
    s.tunnel.call("new", "lookup", { q: "x" });
    expect(await s.owner.next("caller_tool_request")).toMatchObject({
      tool: "lookup",
      arguments: { q: "x" },
    });
  });

  it("accepts the declaration inside context through the session tool", async () => {
    const s = await hostedSession({ caller: ANT });
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      context: { caller_id: "bee", caller_tools: [{ name: "buzz" }] },
    });
    expect(result.isError).toBeUndefined();
    const sent = await s.tunnel.nextConfig((c) => c.caller_id === "bee");
    expect(sent.tools).toEqual([{ name: "buzz" }]);
  });

  it("refuses conflicting top-level and context declarations", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      caller_id: "ant",
      context: { caller_id: "bee" },
    });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("caller_id");
    const info = await sessionStub(s.sessionId).getInfo(ADMIN, null);
    expect(info).toMatchObject({ value: { caller_id: "ant" } });
  });
});
