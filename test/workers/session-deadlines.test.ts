import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, outcomeOf } from "./support/fake-host.js";
import { events, liveSession, respond } from "./support/session.js";
import { ADMIN } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

describe("the caller tool deadline", () => {
  it("is enforced by the alarm: timeout to the host, caller_tool_failed, later answers refused", async () => {
    const s = await liveSession({ callerTimeoutMs: 5_000 });
    const t0 = freezeClock();
    s.tunnel.call("call-1");
    const { request_id, deadline } = await s.owner.next("caller_tool_request");
    expect(Date.parse(deadline)).toBe(t0 + 5_000);

    // Before the deadline the alarm leaves the call alone.
    expect(await runDurableObjectAlarm(s.stub)).toBe(true);
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { pending_caller_requests: 1 } });

    vi.setSystemTime(t0 + 5_000);
    expect(await runDurableObjectAlarm(s.stub)).toBe(true);
    const outcome = await s.tunnel.result("call-1");
    expect(outcome).toMatchObject({ ok: false, error: { reason: "timeout" } });
    if (outcome.ok) throw new Error("expected a failure");
    expect(outcome.error.message).toContain("5 s");
    expect(await s.owner.next("caller_tool_failed")).toMatchObject({ request_id, reason: "timeout" });

    const late = await respond(s.sessionId, request_id, { result: "too late" });
    expect(late).toMatchObject({ ok: false, error: { code: "request_expired" } });
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1")).toHaveLength(1);
  });

  it("is per call: only the expired one fails", async () => {
    const s = await liveSession({ callerTimeoutMs: 5_000 });
    const t0 = freezeClock();
    s.tunnel.call("early");
    const early = await s.owner.next("caller_tool_request");
    vi.setSystemTime(t0 + 3_000);
    s.tunnel.call("late");
    const late = await s.owner.next("caller_tool_request");
    vi.setSystemTime(t0 + 5_000);
    await runDurableObjectAlarm(s.stub);
    expect(await s.tunnel.result("early")).toMatchObject({ ok: false, error: { reason: "timeout" } });
    expect((await respond(s.sessionId, late.request_id, { result: "in time" })).ok).toBe(true);
    expect(await s.tunnel.result("late")).toEqual({ ok: true, result: "in time" });
    expect((await respond(s.sessionId, early.request_id, { result: "x" })).ok).toBe(false);
  });

  it("survives an answered call: the alarm does not fail it afterwards", async () => {
    const s = await liveSession({ callerTimeoutMs: 5_000 });
    const t0 = freezeClock();
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    await respond(s.sessionId, request_id, { result: "ok" });
    vi.setSystemTime(t0 + 60_000);
    await runDurableObjectAlarm(s.stub);
    await s.tunnel.barrier();
    expect(s.tunnel.answers("call-1").map(outcomeOf)).toEqual([{ ok: true, result: "ok" }]);
    const log = await events(s.sessionId);
    expect(log.events.some((e) => e.type === "caller_tool_failed")).toBe(false);
  });
});
