import { afterEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { disconnectAll, SessionTunnel } from "./support/fake-host.js";
import { errorOf } from "./support/rpc-socket.js";
import { events, hostedSession, liveSession, readEvents, subscribe } from "./support/session.js";
import { ADMIN, OTHER, READER } from "./support/tokens.js";

afterEach(disconnectAll);

describe("session_events from the host", () => {
  it("are stored once per seq: a re-sent batch is answered again but not stored twice", async () => {
    const s = await hostedSession();
    const batch: AgentEvent[] = [
      { seq: 1, type: "droid_log", text: "booting" },
      { seq: 2, type: "droid_output", text: "hello" },
    ];
    expect(await s.tunnel.events(...batch)).toBe(2);
    expect(await s.tunnel.events(...batch)).toBe(2);
    // A batch that overlaps what is stored: only the new event is stored.
    expect(
      await s.tunnel.events(
        { seq: 2, type: "droid_output", text: "hello" },
        { seq: 3, type: "droid_log", text: "later" },
      ),
    ).toBe(3);

    const log = await events(s.sessionId);
    const droid = log.events.filter((e) => e.type === "droid_log" || e.type === "droid_output");
    expect(droid.map((e) => ("text" in e ? e.text : null))).toEqual(["booting", "hello", "later"]);
  });

  it("tell a reconnecting host how far the session stored", async () => {
    const s = await hostedSession();
    expect(await s.tunnel.events({ seq: 3, type: "droid_log", text: "x" })).toBe(3);
    const again = await SessionTunnel.open(s.sessionId);
    expect((await again.hello(s.host.hostId)).stored_event_seq).toBe(3);
  });

  it("move the session to running, and reach subscribers as they happen", async () => {
    const s = await liveSession();
    await s.tunnel.events({ seq: 1, type: "droid_status", status: "running" });
    expect(await s.owner.next("droid_status")).toMatchObject({ status: "running", session_id: s.sessionId });
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "running" } });
  });

  it("end the session as exited on droid_status exited, after answering the batch", async () => {
    const s = await liveSession();
    const id = s.tunnel.socket.request(TunnelMethod.sessionEvents, {
      events: [
        { seq: 1, type: "droid_output", text: "bye" },
        { seq: 2, type: "droid_status", status: "exited", exit_code: 0 },
      ],
    });
    // The runner drops events only once acknowledged: the answer comes before the tunnel closes.
    expect(await s.tunnel.socket.answer(id)).toEqual({ kind: "result", id, result: { stored_seq: 2 } });
    expect(await s.tunnel.socket.closed).toBe(1000);
    expect(await s.host.nextStop()).toMatchObject({ session_id: s.sessionId });
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "exited" } });
    const log = await events(s.sessionId);
    expect(log.events.slice(-3)).toMatchObject([
      { type: "droid_output", text: "bye" },
      { type: "droid_status", status: "exited", exit_code: 0 },
      { type: "session_ended", reason: expect.stringContaining("exited with code 0") },
    ]);
    expect(log.status).toBe("exited");
  });

  it("refuse a batch that breaks the schema with invalid params, storing nothing", async () => {
    const s = await hostedSession();
    const answer = await s.tunnel.socket.ask(TunnelMethod.sessionEvents, {
      events: [{ seq: 0, type: "droid_log", text: "seq starts at 1" }],
    });
    expect(errorOf(answer).code).toBe(RpcErrorCode.InvalidParams);
    const log = await events(s.sessionId);
    expect(log.events.some((e) => e.type === "droid_log")).toBe(false);
  });
});

describe("reading events", () => {
  it("returns events from since_index on, with next_index to continue", async () => {
    const s = await hostedSession();
    await s.tunnel.events(
      ...[1, 2, 3, 4].map((n): AgentEvent => ({ seq: n, type: "droid_log", text: `line ${n}` })),
    );
    const all = await events(s.sessionId);
    expect(all.events.map((e) => e.index)).toEqual([...all.events.keys()]);
    const total = all.events.length;
    expect(all.next_index).toBe(total);

    const tail = await events(s.sessionId, total - 2);
    expect(tail.events.map((e) => e.index)).toEqual([total - 2, total - 1]);
    expect(tail.events.map((e) => e.type === "droid_log" && e.text)).toEqual(["line 3", "line 4"]);
    expect(tail.next_index).toBe(total);

    const none = await events(s.sessionId, total);
    expect(none.events).toEqual([]);
    expect(none.next_index).toBe(total);
  });

  it("honours limit", async () => {
    const s = await hostedSession();
    const page = await readEvents(s.sessionId, ADMIN, 0, 1);
    expect(page).toMatchObject({ ok: true, value: { next_index: 1 } });
    expect(page.ok && page.value.events).toHaveLength(1);
  });

  it("lets admin and admin:ro tokens that do not own the session read it", async () => {
    const s = await hostedSession();
    expect((await readEvents(s.sessionId, READER)).ok).toBe(true);
    expect((await readEvents(s.sessionId, OTHER)).ok).toBe(true);
  });

  it("replays the backlog to a new WebSocket subscriber from since_index", async () => {
    const s = await hostedSession();
    const sub = await subscribe(s.sessionId, undefined, "?since_index=1");
    const first = await sub.next("session_started");
    expect(first.index).toBe(1);
    expect(sub.all[0]?.type).toBe("session_started");
  });
});
