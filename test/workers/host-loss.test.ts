/**
 * Hosts that go away: a host-agent disconnected past OUBLIETTE_HOST_GRACE_MS loses its sessions
 * (the registry's alarm decides, on the shared fake clock), and a host that says hello is
 * reconciled against the sessions it reports.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { config } from "../../worker/src/env.js";
import type { HostListing } from "../../worker/src/hosts/host-listing.js";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, FakeHost, registryStub, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { hostMissingSince, placementsOn, runRegistryAlarm } from "./support/registry.js";
import { events, liveSession, newProjectId, respond, spawn } from "./support/session.js";
import { ADMIN } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

const graceMs = () => config(env).hostGraceMs;

/** A live session on a host with room for one, with one call waiting for the caller. */
async function sessionWithWaitingCall() {
  const s = await liveSession({}, { maxSessions: 1 });
  s.tunnel.call("call-1", "send_response", { text: "hi" });
  await s.owner.next("caller_tool_request");
  return s;
}

describe("a host gone past the grace period", () => {
  it("loses its sessions: status lost, session_ended naming the host, waiting calls fail host_lost", async () => {
    const s = await sessionWithWaitingCall();
    const t0 = freezeClock();
    s.host.close();
    expect(await hostMissingSince(s.host.hostId)).toBe(t0);

    // Within the grace period the alarm leaves everything alone.
    vi.setSystemTime(t0 + graceMs() - 1);
    await runRegistryAlarm();
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({
      value: { status: "starting", pending_caller_requests: 1 },
    });
    expect(s.tunnel.answers("call-1")).toEqual([]);

    vi.setSystemTime(t0 + graceMs());
    await runRegistryAlarm();
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({
      value: { status: "lost", pending_caller_requests: 0 },
    });
    // The droid's call fails at once (the session tunnel was still up to hear it), then it closes.
    expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "host_lost" } });
    expect(await s.tunnel.socket.closed).toBe(1000);
    expect(await s.owner.next("caller_tool_failed")).toMatchObject({
      request_id: "call-1",
      reason: "host_lost",
    });
    const ended = await s.owner.next("session_ended");
    expect(ended.reason).toContain(s.host.hostId);
    expect(ended.reason).toContain("lost");

    // An answer after that is refused, never delivered.
    const late = await respond(s.sessionId, "call-1", { result: "too late" });
    expect(late).toMatchObject({ ok: false, error: { code: "request_expired" } });
    expect(s.tunnel.answers("call-1")).toHaveLength(1);
  });

  it("frees the host's capacity, and stops the lost session if the host comes back running it", async () => {
    const s = await sessionWithWaitingCall();
    const t0 = freezeClock();
    s.host.close();
    await hostMissingSince(s.host.hostId);
    vi.setSystemTime(t0 + graceMs());
    await runRegistryAlarm();
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "lost" } });
    expect(await placementsOn(s.host.hostId)).toBe(0);

    vi.useRealTimers();
    const back = await FakeHost.connect(s.host.hostId, { maxSessions: 1, sessions: [s.sessionId] });
    expect(await back.nextStop()).toMatchObject({ session_id: s.sessionId });
    // Its one place is free again.
    expect((await spawn()).info.host_id).toBe(s.host.hostId);
  });
});

describe("projects of a host", () => {
  it("stay on their host while it is briefly away or lost, and move only when a spawn asks to relocate", async () => {
    const first = await FakeHost.connect(uniqueHostId("first"), { maxSessions: 5 });
    const projectId = newProjectId();
    expect((await spawn({ projectId })).info.host_id).toBe(first.hostId);
    const t0 = freezeClock();
    first.close();
    await hostMissingSince(first.hostId);
    vi.useRealTimers();
    const second = await FakeHost.connect(uniqueHostId("second"), { maxSessions: 5 });
    // Sticky: its container and workspaces are on the first host.
    await expect(spawn({ projectId })).rejects.toThrow(/lives on host .*relocate: true/);
    freezeClock();
    vi.setSystemTime(t0 + graceMs());
    await runRegistryAlarm();
    vi.useRealTimers();
    // Lost, it is still where the project's workspaces are: a spawn says so, at once.
    await expect(spawn({ projectId })).rejects.toThrow(/^spawn failed: host_lost /);
    await expect(spawn({ projectId })).rejects.toThrow(
      `project ${projectId} lives on host ${first.hostId}, which is lost; its workspaces are there. Spawn with relocate: true`,
    );
    const moved = await spawn({ projectId, relocate: true, remoteUrl: "https://git.example.com/a.git" });
    expect(moved.info).toMatchObject({
      host_id: second.hostId,
      moved: {
        from_host: first.hostId,
        to_host: second.hostId,
        reason: "relocated",
        workspace: "from_remote",
      },
    });
    expect((await events(moved.sessionId)).events.find((e) => e.type === "project_moved")).toMatchObject({
      from_host: first.hostId,
      message: expect.stringContaining(`Its workspaces stay on ${first.hostId}`),
    });
    // From now on the project lives on the second host.
    const next = await spawn({ projectId });
    expect(next.info.host_id).toBe(second.hostId);
    expect(next.info).not.toHaveProperty("moved");
  });
});

describe("a lost host", () => {
  it("stays listed as lost until it is revoked", async () => {
    const host = await FakeHost.connect(uniqueHostId("gone"), { maxSessions: 5 });
    await spawn();
    const t0 = freezeClock();
    host.close();
    await hostMissingSince(host.hostId);
    vi.setSystemTime(t0 + graceMs() * 3);
    await runRegistryAlarm();
    vi.useRealTimers();
    const admin = await initialize();
    const list = async () =>
      (
        (await callTool(admin, "host", { action: "list" })).structuredContent as { hosts: HostListing[] }
      ).hosts.find((h) => h.host_id === host.hostId);
    expect(await list()).toMatchObject({
      connected: false,
      sessions: 0,
      missing_since: new Date(t0).toISOString(),
      lost_since: new Date(t0 + graceMs() * 3).toISOString(),
    });
    // A later alarm (another host's, say) leaves it listed.
    await runDurableObjectAlarm(registryStub());
    expect(await list()).toMatchObject({ lost_since: new Date(t0 + graceMs() * 3).toISOString() });
    expect((await callTool(admin, "host", { action: "revoke", host_id: host.hostId })).isError).toBeFalsy();
    expect(await list()).toBeUndefined();
  });
});

describe("a host that comes back within the grace period", () => {
  it("keeps its sessions and their waiting calls", async () => {
    const s = await sessionWithWaitingCall();
    const t0 = freezeClock();
    s.host.close();
    await hostMissingSince(s.host.hostId);
    vi.setSystemTime(t0 + graceMs() / 2);
    const back = await FakeHost.connect(s.host.hostId, { maxSessions: 1, sessions: [s.sessionId] });

    vi.setSystemTime(t0 + graceMs() * 3);
    expect(await runRegistryAlarm()).toBe(true);
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({
      value: { status: "starting", pending_caller_requests: 1 },
    });
    expect(await placementsOn(s.host.hostId)).toBe(1);
    expect(back.stops()).toEqual([]);
    expect((await respond(s.sessionId, "call-1", { result: "still here" })).ok).toBe(true);
    expect(await s.tunnel.result("call-1")).toEqual({ ok: true, result: "still here" });
  });
});

describe("reconciliation on host_hello", () => {
  it("ends lost a placed session the host says it no longer runs", async () => {
    const s = await sessionWithWaitingCall();
    // The host-agent restarted and came back without the session's container.
    const back = await FakeHost.connect(s.host.hostId, { maxSessions: 1, sessions: [] });
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "lost" } });
    expect(await s.tunnel.result("call-1")).toMatchObject({ ok: false, error: { reason: "host_lost" } });
    const log = await events(s.sessionId);
    expect(log.events.at(-1)).toMatchObject({
      type: "session_ended",
      reason: expect.stringContaining("came back without this session"),
    });
    expect(await placementsOn(s.host.hostId)).toBe(0);
    // Nothing to stop: the host does not run it.
    expect(back.stops()).toEqual([]);
  });

  it("sends session_stop for a session the host runs that is not placed on it", async () => {
    const stray = "ses_0123456789abcdef01234567";
    const host = await FakeHost.connect(uniqueHostId("stray"), { sessions: [stray] });
    expect(await host.nextStop()).toMatchObject({
      session_id: stray,
      reason: expect.stringContaining("not placed on this host"),
    });
  });

  it("stops a session that ended while its host was away, once the host is back", async () => {
    const s = await liveSession();
    s.host.close();
    await hostMissingSince(s.host.hostId);
    expect(await s.stub.end(ADMIN, "done while away")).toMatchObject({
      ok: true,
      value: { status: "ended" },
    });
    expect(await placementsOn(s.host.hostId)).toBe(0);
    const back = await FakeHost.connect(s.host.hostId, { sessions: [s.sessionId] });
    expect(await back.nextStop()).toMatchObject({ session_id: s.sessionId });
  });
});
