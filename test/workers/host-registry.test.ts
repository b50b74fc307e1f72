import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_TUNNEL_FRAME_BYTES } from "../../protocol/tunnel.js";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, FakeHost, registryStub, SessionTunnel } from "./support/fake-host.js";
import { upgrade } from "./support/frame-socket.js";
import { callTool, initialize } from "./support/mcp.js";
import { events, newSessionId, sessionStub, spawn } from "./support/session.js";
import { ADMIN, HOST_TOKEN } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

/**
 * Resolves once the registry has run the synchronous start of every call made before on this
 * stub (calls on one stub are delivered in order): a startSession made before is now waiting.
 */
async function startedWaiting(registry: ReturnType<typeof registryStub>): Promise<void> {
  await registry.stopSession({ sessionId: "ses_barrier", reason: "barrier" });
}

/** Spawns a session and returns the host it was placed on. */
async function placedOn(): Promise<string | null> {
  return (await spawn()).info.host_id;
}

describe("placement", () => {
  it("fails with no_host when, once the wait for a host is over, no host has room", async () => {
    await FakeHost.connect("full", { maxSessions: 1 });
    expect(await placedOn()).toBe("full");
    const registry = registryStub();
    const t0 = freezeClock();
    const placed = registry.startSession({ sessionId: newSessionId(), spec: {} });
    await startedWaiting(registry);
    vi.setSystemTime(t0 + 10_000);
    // A host saying hello wakes waiting spawns; this one is still full.
    await FakeHost.connect("full", { maxSessions: 1 });
    expect(await placed).toMatchObject({ ok: false, error: { code: "no_host" } });
  });

  it("places a spawn that waits for a host on the host that connects", async () => {
    const registry = registryStub();
    const placed = registry.startSession({ sessionId: newSessionId(), spec: {} });
    await startedWaiting(registry);
    const host = await FakeHost.connect("late-host");
    expect(await placed).toEqual({ ok: true, value: { hostId: "late-host", runtime: "process" } });
    expect(host.socket.received("session_start")).toHaveLength(1);
  });

  it("keeps waiting when a host without room says hello before the wait is over", async () => {
    await FakeHost.connect("busy", { maxSessions: 1 });
    await placedOn();
    const registry = registryStub();
    const placed = registry.startSession({ sessionId: newSessionId(), spec: {} });
    await startedWaiting(registry);
    await FakeHost.connect("busy", { maxSessions: 1 });
    await FakeHost.connect("roomy");
    expect(await placed).toMatchObject({ ok: true, value: { hostId: "roomy" } });
  });

  it("places each session on the least loaded host", async () => {
    const h1 = await FakeHost.connect("least-1");
    expect([await placedOn(), await placedOn()]).toEqual(["least-1", "least-1"]);
    const h2 = await FakeHost.connect("least-2");
    expect(await placedOn()).toBe("least-2");
    expect(await placedOn()).toBe("least-2");
    expect(h1.socket.received("session_start")).toHaveLength(2);
    expect(h2.socket.received("session_start")).toHaveLength(2);
  });

  it("sends session_start with the session id and spec to the chosen host", async () => {
    const host = await FakeHost.connect("spec-host");
    const { sessionId, info } = await spawn();
    expect(info).toMatchObject({ host_id: "spec-host", runtime: "process", status: "starting" });
    expect(host.socket.received("session_start")).toEqual([
      expect.objectContaining({ session_id: sessionId, spec: {} }),
    ]);
  });

  it("ignores a host that has not said hello", async () => {
    const res = await upgrade("/v1/tunnel/host?host_id=silent", HOST_TOKEN);
    expect(res.status).toBe(101);
    res.webSocket?.accept();
    const registry = registryStub();
    const placed = registry.startSession({ sessionId: newSessionId(), spec: {} });
    await startedWaiting(registry);
    await FakeHost.connect("talkative");
    expect(await placed).toMatchObject({ ok: true, value: { hostId: "talkative" } });
    res.webSocket?.close();
  });
});

describe("a host that refuses", () => {
  it("surfaces the host's message as the spawn error and fails the session", async () => {
    await FakeHost.connect("full-host", {
      answer: (f) => (f.type === "session_start" ? { ok: false, message: "disk full" } : { ok: true }),
    });
    const mcp = await initialize();
    const result = await callTool(mcp, "session", { action: "spawn", prompt: "hi" });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("disk full");
    expect(result.structuredContent).toMatchObject({ error: { code: "host_error", message: "disk full" } });
  });

  it("records the failure in the session", async () => {
    await FakeHost.connect("full-host-2", { answer: () => ({ ok: false, message: "no image" }) });
    const sessionId = newSessionId();
    const created = await sessionStub(sessionId).create({
      sessionId,
      projectId: "default",
      owner: ADMIN,
      caller: null,
      callerTimeoutMs: 60_000,
      prompt: null,
      image: null,
      via: null,
    });
    expect(created).toEqual({ ok: false, error: { code: "host_error", message: "no image" } });
    expect(await sessionStub(sessionId).getInfo(ADMIN, null)).toMatchObject({ value: { status: "failed" } });
    const log = await events(sessionId);
    expect(log.events.at(-1)).toMatchObject({ type: "session_ended", reason: "no image" });
  });
});

describe("stopping", () => {
  it("sends session_stop for an ended session to the host that runs it", async () => {
    const h1 = await FakeHost.connect("stop-1");
    const a = await spawn();
    const h2 = await FakeHost.connect("stop-2");
    const b = await spawn();
    expect([a.info.host_id, b.info.host_id]).toEqual(["stop-1", "stop-2"]);

    const ended = await b.stub.end(ADMIN, "enough");
    expect(ended).toMatchObject({ ok: true, value: { status: "ended" } });
    expect(await h2.socket.next("session_stop")).toMatchObject({ session_id: b.sessionId, reason: "enough" });
    await a.stub.end(ADMIN, "also enough");
    expect(await h1.socket.next("session_stop")).toMatchObject({ session_id: a.sessionId });
    expect(h1.socket.received("session_stop").map((f) => f.session_id)).toEqual([a.sessionId]);
    expect(h2.socket.received("session_stop").map((f) => f.session_id)).toEqual([b.sessionId]);
  });

  it("ends the session through the MCP tool and closes its tunnel", async () => {
    const host = await FakeHost.connect("mcp-stop");
    const mcp = await initialize();
    const spawned = await callTool(mcp, "session", { action: "spawn" });
    const sessionId = String(spawned.structuredContent?.session_id);
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello("mcp-stop");
    const ended = await callTool(mcp, "session", { action: "end", session_id: sessionId });
    expect(ended.structuredContent).toMatchObject({ status: "ended" });
    expect(await host.socket.next("session_stop")).toMatchObject({ session_id: sessionId });
    expect(await tunnel.socket.closed).toBe(1000);
    const log = await events(sessionId);
    expect(log.events.at(-1)).toMatchObject({ type: "session_ended", reason: "ended by the caller" });
  });

  it("stops the container when the droid exits", async () => {
    const host = await FakeHost.connect("exit-host");
    const { sessionId, stub } = await spawn();
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello("exit-host");
    tunnel.send({
      type: "session_events",
      seq: 1,
      events: [{ type: "droid_status", status: "exited", exit_code: 0 }],
    });
    expect(await host.socket.next("session_stop")).toMatchObject({ session_id: sessionId });
    expect(await stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "exited" } });
  });
});

describe("the host channel", () => {
  it("answers a bad frame with an error frame and stays up", async () => {
    const host = await FakeHost.connect("chatty");
    host.socket.send("{nope");
    expect((await host.socket.next("error")).error.code).toBe("bad_frame");
    host.socket.send({ type: "ack", req_id: 7 });
    expect((await host.socket.next("error")).error.code).toBe("bad_frame");
    expect(await placedOn()).toBe("chatty");
  });

  it("measures the frame cap in bytes, not characters", async () => {
    const host = await FakeHost.connect("wordy");
    // Two UTF-8 bytes per character: within the cap in characters, over it in bytes.
    const message = "é".repeat(MAX_TUNNEL_FRAME_BYTES / 2 + 1000);
    host.socket.send({ type: "error", error: { code: "internal", message } });
    expect((await host.socket.next("error")).error.code).toBe("bad_frame");
  });

  it("replaces an older connection of the same host", async () => {
    const old = await FakeHost.connect("twin");
    const fresh = await FakeHost.connect("twin");
    expect(await old.socket.closed).toBe(4000);
    await placedOn();
    expect(fresh.socket.received("session_start")).toHaveLength(1);
  });

  it("refuses a connection without a valid host_id", async () => {
    const res = await upgrade("/v1/tunnel/host?host_id=bad%20id", HOST_TOKEN);
    expect(res.status).toBe(400);
  });
});
