import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll, SessionTunnel } from "./support/fake-host.js";
import { events, hostedSession, liveSession, readEvents, subscribe } from "./support/session.js";
import { ADMIN, OTHER, READER } from "./support/tokens.js";

afterEach(disconnectAll);

describe("session_events from the host", () => {
  it("are stored once per seq: a re-sent batch is acked again but not stored twice", async () => {
    const s = await hostedSession();
    const batch = {
      type: "session_events" as const,
      seq: 1,
      events: [
        { type: "droid_log" as const, text: "booting" },
        { type: "droid_output" as const, text: "hello" },
      ],
    };
    s.tunnel.send(batch);
    expect(await s.tunnel.socket.next("session_events_ack")).toEqual({ type: "session_events_ack", seq: 1 });
    s.tunnel.send(batch);
    expect(await s.tunnel.socket.next("session_events_ack")).toEqual({ type: "session_events_ack", seq: 1 });
    s.tunnel.send({ type: "session_events", seq: 2, events: [{ type: "droid_log", text: "later" }] });
    await s.tunnel.socket.next("session_events_ack", (f) => f.seq === 2);

    const log = await events(s.sessionId);
    const droid = log.events.filter((e) => e.type === "droid_log" || e.type === "droid_output");
    expect(droid.map((e) => ("text" in e ? e.text : null))).toEqual(["booting", "hello", "later"]);
  });

  it("tell a reconnecting host how far the session stored", async () => {
    const s = await hostedSession();
    s.tunnel.send({ type: "session_events", seq: 3, events: [{ type: "droid_log", text: "x" }] });
    await s.tunnel.socket.next("session_events_ack");
    const again = await SessionTunnel.open(s.sessionId);
    const { welcome } = await again.hello();
    expect(welcome.stored_event_seq).toBe(3);
  });

  it("move the session to running, and reach subscribers as they happen", async () => {
    const s = await liveSession();
    s.tunnel.send({ type: "session_events", seq: 1, events: [{ type: "droid_status", status: "running" }] });
    expect(await s.owner.next("droid_status")).toMatchObject({ status: "running", session_id: s.sessionId });
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "running" } });
  });
});

describe("reading events", () => {
  it("returns events from since_index on, with next_index to continue", async () => {
    const s = await hostedSession();
    s.tunnel.send({
      type: "session_events",
      seq: 1,
      events: [1, 2, 3, 4].map((n) => ({ type: "droid_log" as const, text: `line ${n}` })),
    });
    await s.tunnel.socket.next("session_events_ack");
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
