import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freezeClock } from "./support/clock.js";
import { disconnectAll } from "./support/fake-host.js";
import { events, liveSession, respond } from "./support/session.js";
import { ADMIN } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

/** The fake host runs no runner, so its sessions stay starting: live, either way. */
const LIVE = expect.stringMatching(/^(starting|running)$/);

async function statusOf(s: Awaited<ReturnType<typeof liveSession>>) {
  const info = await s.stub.getInfo(ADMIN, null);
  if (!info.ok) throw new Error(info.error.message);
  return info.value;
}

async function lastEnd(sessionId: string) {
  return (await events(sessionId)).events.filter((e) => e.type === "session_ended").at(-1);
}

describe("turn-aware lifetime", () => {
  it("stops a session idle past its idle timeout, with a session_ended naming the reason", async () => {
    const t0 = freezeClock();
    const s = await liveSession({ idleTimeoutMs: 60_000 });
    vi.setSystemTime(t0 + 59_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: LIVE, busy: false });
    vi.setSystemTime(t0 + 61_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: "ended" });
    expect(await lastEnd(s.sessionId)).toMatchObject({
      reason: expect.stringContaining("idle_timeout_seconds 60"),
    });
  });

  it("never stops a session for idleness while a caller tool call is in flight", async () => {
    const t0 = freezeClock();
    const s = await liveSession({ idleTimeoutMs: 60_000, callerTimeoutMs: 600_000 });
    s.tunnel.call("call-1");
    const { request_id } = await s.owner.next("caller_tool_request");
    vi.setSystemTime(t0 + 300_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: LIVE, busy: true });
    // Answered: the idle clock starts again from the answer.
    expect((await respond(s.sessionId, request_id, { result: "ok" })).ok).toBe(true);
    vi.setSystemTime(t0 + 330_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: LIVE, busy: false });
    vi.setSystemTime(t0 + 361_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: "ended" });
  });

  it("never stops a session for idleness while a turn is in flight; a completion ends the turn", async () => {
    const t0 = freezeClock();
    const s = await liveSession({ idleTimeoutMs: 60_000 });
    await s.stub.sendMessage({ principal: ADMIN, message: "work", caller: null, via: null });
    vi.setSystemTime(t0 + 120_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: LIVE, busy: true });
    await s.tunnel.events({ seq: 1, type: "completion", message_seq: 1, stop_reason: "end_turn" });
    expect(await statusOf(s)).toMatchObject({ busy: false });
    vi.setSystemTime(t0 + 181_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: "ended" });
  });

  it("stops a session at its lifetime cap even while it is busy", async () => {
    const t0 = freezeClock();
    const s = await liveSession({ maxLifetimeMs: 600_000, callerTimeoutMs: 900_000 });
    s.tunnel.call("call-1");
    await s.owner.next("caller_tool_request");
    vi.setSystemTime(t0 + 600_000);
    await runDurableObjectAlarm(s.stub);
    expect(await statusOf(s)).toMatchObject({ status: "ended" });
    expect(await lastEnd(s.sessionId)).toMatchObject({ reason: expect.stringContaining("lifetime cap") });
    expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "session_ended" } });
  });
});
