import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll, FakeHost, registryStub, SessionTunnel } from "./support/fake-host.js";
import { upgrade } from "./support/frame-socket.js";
import { callTool, initialize } from "./support/mcp.js";
import { events, newSessionId, spawn } from "./support/session.js";
import { ADMIN, HOST_TOKEN } from "./support/tokens.js";

afterEach(disconnectAll);

/** Spawns a session and returns the host it was placed on. */
async function placedOn(): Promise<string | null> {
  return (await spawn()).info.host_id;
}

describe("placement", () => {
  it("fails with no_host when no host-agent is connected", async () => {
    const res = await registryStub().startSession({ sessionId: newSessionId(), spec: {} });
    expect(res).toMatchObject({ ok: false, error: { code: "no_host" } });
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

  it("never places more sessions on a host than its max_sessions", async () => {
    await FakeHost.connect("tiny", { maxSessions: 1 });
    expect(await placedOn()).toBe("tiny");
    const res = await registryStub().startSession({ sessionId: newSessionId(), spec: {} });
    expect(res).toMatchObject({ ok: false, error: { code: "no_host" } });
  });

  it("ignores a host that has not said hello", async () => {
    const res = await upgrade("/v1/tunnel/host?host_id=silent", HOST_TOKEN);
    res.webSocket?.accept();
    expect(res.status).toBe(101);
    const placed = await registryStub().startSession({ sessionId: newSessionId(), spec: {} });
    expect(placed).toMatchObject({ ok: false, error: { code: "no_host" } });
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
    await expect(spawn()).rejects.toThrow(/host_error no image/);
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
