import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MIN_HOST_AGENT_VERSION } from "../../protocol/host-version.js";
import { Limits } from "../../protocol/limits.js";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { config } from "../../worker/src/env.js";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, FakeHost, registryStub, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { upgrade } from "./support/frame-socket.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { placementsOn } from "./support/registry.js";
import { errorOf } from "./support/rpc-socket.js";
import { events, newProjectId, newSessionId, sessionStub, spawn } from "./support/session.js";
import { ADMIN, HOST_TOKEN } from "./support/tokens.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

/**
 * Resolves once the registry has run the synchronous start of every call made before on this
 * stub (calls on one stub are delivered in order): a `place` made before is now waiting.
 */
async function placeWaiting(registry: ReturnType<typeof registryStub>): Promise<void> {
  await registry.stopSession({ sessionId: "ses_barrier", reason: "barrier" });
}

/** Host connections the registry holds. */
function registryHosts(): Promise<number> {
  return runInDurableObject(registryStub(), (_, state) => state.getWebSockets().length);
}

/** Spawns a session and returns the host it was placed on. */
async function placedOn(): Promise<string | null> {
  return (await spawn()).info.host_id;
}

/** `session spawn` through MCP, for the error the caller sees. */
async function spawnOverMcp() {
  return callTool(await initialize(), "session", {
    action: "spawn",
    project_id: await createProject(),
    prompt: "hi",
  });
}

describe("placement", () => {
  it("fails with no_host when no host connects within the wait", async () => {
    const started = Date.now();
    const result = await spawnOverMcp();
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "no_host" } } });
    expect(result.content[0]?.text).toContain("no host-agent is connected");
    // It waited for a host (tunnels reconnect after blips) before giving up.
    expect(Date.now() - started).toBeGreaterThanOrEqual(config(env).hostWaitMs);
  });

  it("places a spawn that waits for a host on the host that connects, then starts it there", async () => {
    // Frozen, the wait never runs out on its own: only the host's hello can end it.
    freezeClock();
    const registry = registryStub();
    const sessionId = newSessionId();
    const projectId = newProjectId();
    const placed = registry.place({ sessionId, projectId });
    await placeWaiting(registry);
    const host = await FakeHost.connect(uniqueHostId("late"));
    expect(await placed).toEqual({ ok: true, value: { hostId: host.hostId, runtime: "process" } });
    expect(host.starts()).toEqual([]);
    const project = { image: "droid:test", limits: {}, workspace_isolation: false };
    const start = {
      sessionId,
      projectId,
      workspaceId: "default",
      workspace: { initGit: true, remoteUrl: null, gitCredential: null, branch: null, sessionGit: null },
      project,
      spec: {},
    };
    expect(await registry.start(start)).toEqual({ ok: true, value: undefined });
    // The workspace first, then the session in the project's container.
    expect(host.socket.requests(TunnelMethod.workspaceCreate).map((r) => r.params)).toEqual([
      { project_id: projectId, workspace_id: "default", init_git: true },
    ]);
    expect(host.starts()).toEqual([
      { session_id: sessionId, project_id: projectId, workspace_id: "default", project, spec: {} },
    ]);
  });

  it("fails at once with host_full, naming the capacity, when every connected host is full", async () => {
    const a = await FakeHost.connect(uniqueHostId("full-a"), { maxSessions: 1 });
    const b = await FakeHost.connect(uniqueHostId("full-b"), { maxSessions: 1 });
    expect(new Set([await placedOn(), await placedOn()])).toEqual(new Set([a.hostId, b.hostId]));
    // Frozen, a spawn that waited for room would never end: it must not wait.
    freezeClock();
    const result = await spawnOverMcp();
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "host_full" } } });
    expect(result.content[0]?.text).toContain(`${a.hostId} runs 1 of 1`);
    expect(result.content[0]?.text).toContain(`${b.hostId} runs 1 of 1`);
    expect([...a.starts(), ...b.starts()]).toHaveLength(2);
  });

  it("ends a waiting spawn with host_full when the host that says hello has no room", async () => {
    const id = uniqueHostId("busy");
    const first = await FakeHost.connect(id, { maxSessions: 1 });
    const { sessionId } = await spawn();
    first.close();
    await until(async () => (await registryHosts()) === 0, "the registry dropped the host");
    freezeClock();
    const registry = registryStub();
    const placed = registry.place({ sessionId: newSessionId(), projectId: newProjectId() });
    await placeWaiting(registry);
    // Back, still running its one session: it wakes the spawn, which it cannot take.
    await FakeHost.connect(id, { maxSessions: 1, sessions: [sessionId] });
    expect(await placed).toMatchObject({ ok: false, error: { code: "host_full" } });
  });

  it("places each session on the least loaded host", async () => {
    const h1 = await FakeHost.connect(uniqueHostId("least-1"));
    expect([await placedOn(), await placedOn()]).toEqual([h1.hostId, h1.hostId]);
    const h2 = await FakeHost.connect(uniqueHostId("least-2"));
    expect(await placedOn()).toBe(h2.hostId);
    expect(await placedOn()).toBe(h2.hostId);
    expect(h1.starts()).toHaveLength(2);
    expect(h2.starts()).toHaveLength(2);
  });

  it("sends session_start with the session id and spec to the chosen host", async () => {
    const host = await FakeHost.connect(uniqueHostId("spec"));
    const { sessionId, info } = await spawn();
    expect(info).toMatchObject({ host_id: host.hostId, runtime: "process", status: "starting" });
    expect(host.starts()).toEqual([
      {
        session_id: sessionId,
        project_id: expect.stringMatching(/^prj_/),
        workspace_id: "default",
        project: { limits: {}, workspace_isolation: false },
        spec: { agent: { runtime: "scripted" } },
      },
    ]);
  });

  it("ignores a host that has not said hello", async () => {
    await FakeHost.open(uniqueHostId("silent"));
    freezeClock();
    const registry = registryStub();
    const placed = registry.place({ sessionId: newSessionId(), projectId: newProjectId() });
    await placeWaiting(registry);
    const talkative = await FakeHost.connect(uniqueHostId("talkative"));
    expect(await placed).toMatchObject({ ok: true, value: { hostId: talkative.hostId } });
  });
});

describe("a host that refuses session_start", () => {
  it("surfaces the host's message as the spawn error host_error", async () => {
    await FakeHost.connect(uniqueHostId("refusing"), {
      answer: (r) =>
        r.method === "session_start"
          ? { ok: false, reason: "runtime_error", message: "disk full" }
          : { ok: true },
    });
    const result = await spawnOverMcp();
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "host_error" } } });
    expect(result.content[0]?.text).toContain("disk full");
  });

  it("fails the session and releases the placement, so the host's capacity is free again", async () => {
    let refuse = true;
    const host = await FakeHost.connect(uniqueHostId("refusing-once"), {
      maxSessions: 1,
      answer: (r) => {
        if (r.method !== "session_start" || !refuse) return { ok: true };
        refuse = false;
        return { ok: false, reason: "image_not_found", message: "no image" };
      },
    });
    const sessionId = newSessionId();
    const created = await sessionStub(sessionId).create({
      sessionId,
      projectId: newProjectId(),
      workspaceId: "default",
      owner: ADMIN,
      caller: null,
      callerTimeoutMs: 60_000,
      prompt: null,
      image: null,
      project: { limits: {}, workspace_isolation: false },
      workspace: { initGit: false, remoteUrl: null, gitCredential: null, branch: null, sessionGit: null },
      via: null,
      agent: { runtime: "scripted" },
      droidKey: null,
      idleTimeoutMs: 0,
      maxLifetimeMs: 0,
    });
    // The host's reason is kept: the caller learns the image is missing, not just "host error".
    expect(created).toMatchObject({ ok: false, error: { code: "image_not_found" } });
    if (created.ok) throw new Error("expected a failure");
    expect(created.error.message).toContain("no image");
    expect(await sessionStub(sessionId).getInfo(ADMIN, null)).toMatchObject({ value: { status: "failed" } });
    const log = await events(sessionId);
    expect(log.events.at(-1)).toMatchObject({
      type: "session_ended",
      reason: expect.stringContaining("no image"),
    });

    expect(await placementsOn(host.hostId)).toBe(0);
    // With its one place held, this spawn would fail host_full.
    expect(await placedOn()).toBe(host.hostId);
  });

  it("fails the spawn at once with host_error when the host drops before it answers", async () => {
    const host = await FakeHost.connect(uniqueHostId("dropping"), { maxSessions: 1, answer: () => null });
    const sessionId = newSessionId();
    const created = sessionStub(sessionId).create({
      sessionId,
      projectId: newProjectId(),
      workspaceId: "default",
      owner: ADMIN,
      caller: null,
      callerTimeoutMs: 60_000,
      prompt: null,
      image: null,
      project: { limits: {}, workspace_isolation: false },
      workspace: { initGit: false, remoteUrl: null, gitCredential: null, branch: null, sessionGit: null },
      via: null,
      agent: { runtime: "scripted" },
      droidKey: null,
      idleTimeoutMs: 0,
      maxLifetimeMs: 0,
    });
    // The first of its requests (the workspace) is never answered.
    await host.socket.nextRequest(TunnelMethod.workspaceCreate);
    host.close();
    // Not after OUBLIETTE_HOST_ACK_TIMEOUT_MS (30 s): the connection it waited on is gone.
    expect(await created).toMatchObject({ ok: false, error: { code: "host_error" } });
    expect(await placementsOn(host.hostId)).toBe(0);
  });

  it("keeps the name host_full when the host says it is full", async () => {
    await FakeHost.connect(uniqueHostId("secretly-full"), {
      answer: () => ({ ok: false, reason: "host_full", message: "no room for another container" }),
    });
    const result = await spawnOverMcp();
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "host_full" } } });
  });
});

describe("stopping", () => {
  it("sends session_stop for an ended session to the host that runs it", async () => {
    const h1 = await FakeHost.connect(uniqueHostId("stop-1"));
    const a = await spawn();
    const h2 = await FakeHost.connect(uniqueHostId("stop-2"));
    const b = await spawn();
    expect([a.info.host_id, b.info.host_id]).toEqual([h1.hostId, h2.hostId]);

    const ended = await b.stub.end(ADMIN, "enough");
    expect(ended).toMatchObject({ ok: true, value: { status: "ended" } });
    expect(await h2.nextStop()).toEqual({ session_id: b.sessionId, reason: "enough" });
    await a.stub.end(ADMIN, "also enough");
    expect(await h1.nextStop()).toMatchObject({ session_id: a.sessionId });
    expect(h1.stops().map((p) => p.session_id)).toEqual([a.sessionId]);
    expect(h2.stops().map((p) => p.session_id)).toEqual([b.sessionId]);
    expect(await placementsOn(h2.hostId)).toBe(0);
  });

  it("ends the session through the MCP tool and closes its tunnel", async () => {
    const host = await FakeHost.connect(uniqueHostId("mcp-stop"));
    const mcp = await initialize();
    const spawned = await callTool(mcp, "session", { action: "spawn", project_id: await createProject() });
    const sessionId = String(spawned.structuredContent?.session_id);
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello(host.hostId);
    const ended = await callTool(mcp, "session", { action: "end", session_id: sessionId });
    expect(ended.structuredContent).toMatchObject({ status: "ended" });
    expect(await host.nextStop()).toMatchObject({ session_id: sessionId });
    expect(await tunnel.socket.closed).toBe(1000);
    const log = await events(sessionId);
    expect(log.events.at(-1)).toMatchObject({ type: "session_ended", reason: "ended by the caller" });
  });

  it("stops the container when the droid exits", async () => {
    const host = await FakeHost.connect(uniqueHostId("exit"));
    const { sessionId, stub } = await spawn();
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello(host.hostId);
    expect(await tunnel.events({ seq: 1, type: "droid_status", status: "exited", exit_code: 0 })).toBe(1);
    expect(await host.nextStop()).toMatchObject({ session_id: sessionId });
    expect(await stub.getInfo(ADMIN, null)).toMatchObject({ value: { status: "exited" } });
  });
});

describe("the host channel", () => {
  it("answers bad messages with errors, ignores stray answers, and stays up", async () => {
    const host = await FakeHost.connect(uniqueHostId("chatty"));
    host.socket.send("{nope");
    expect(errorOf(await host.socket.answer(null)).code).toBe(RpcErrorCode.ParseError);
    host.socket.send(JSON.stringify({ jsonrpc: "2.0", id: 7 }));
    expect(errorOf(await host.socket.answer(7)).code).toBe(RpcErrorCode.InvalidRequest);
    // An answer to nothing the registry asked is dropped without a reply.
    host.socket.reply("never-asked", {});
    expect(errorOf(await host.socket.ask("no_such_method", {})).code).toBe(RpcErrorCode.MethodNotFound);
    expect(host.socket.answers("never-asked")).toEqual([]);
    expect(await placedOn()).toBe(host.hostId);
  });

  it("measures the frame cap in bytes, not characters", async () => {
    const host = await FakeHost.connect(uniqueHostId("wordy"));
    // Two UTF-8 bytes per character: within the cap in characters, over it in bytes.
    const message = "é".repeat(Limits.frameBytes / 2 + 1000);
    host.socket.replyError("x", { code: RpcErrorCode.InternalError, message });
    const error = errorOf(await host.socket.answer(null));
    expect(error).toMatchObject({
      code: RpcErrorCode.InvalidRequest,
      message: expect.stringContaining("exceeds"),
    });
  });

  it("serves nothing before host_hello", async () => {
    const host = await FakeHost.open(uniqueHostId("shy"));
    const error = errorOf(await host.socket.ask("no_such_method", {}));
    expect(error).toMatchObject({
      code: RpcErrorCode.Unauthenticated,
      message: expect.stringContaining("host_hello"),
    });
  });

  it("refuses a hello naming another host than the connection", async () => {
    const host = await FakeHost.open(uniqueHostId("honest"));
    const error = errorOf(await host.hello({ host_id: "someone-else" }));
    expect(error.code).toBe(RpcErrorCode.InvalidParams);
    expect(error.message).toContain(host.hostId);
  });

  it("refuses another protocol version and closes the channel", async () => {
    const host = await FakeHost.open(uniqueHostId("old"));
    const error = errorOf(await host.hello({ v: 1 }));
    expect(error).toMatchObject({ code: RpcErrorCode.ServerError, data: { reason: "unsupported_version" } });
    expect(await host.socket.closed).toBe(4002);
  });

  it("replaces an older connection of the same host", async () => {
    const id = uniqueHostId("twin");
    const old = await FakeHost.connect(id);
    const fresh = await FakeHost.connect(id);
    expect(await old.socket.closed).toBe(4000);
    await placedOn();
    expect(fresh.starts()).toHaveLength(1);
    expect(old.starts()).toHaveLength(0);
  });

  it("refuses a connection without a valid host_id", async () => {
    const res = await upgrade("/v1/tunnel/host?host_id=bad%20id", HOST_TOKEN);
    expect(res.status).toBe(400);
  });
});

describe("host versions", () => {
  it("lists each host's version, and warns of one older than this Worker supports or not a version", async () => {
    const current = await FakeHost.connect(uniqueHostId("current"), { agentVersion: MIN_HOST_AGENT_VERSION });
    const newer = await FakeHost.connect(uniqueHostId("newer"), { agentVersion: "99.0.0" });
    const old = await FakeHost.connect(uniqueHostId("old"), { agentVersion: "0.0.9" });
    const odd = await FakeHost.connect(uniqueHostId("odd"), { agentVersion: "dev-build" });
    const admin = await initialize();
    const { hosts } = (await callTool(admin, "host", { action: "list" })).structuredContent as {
      hosts: { host_id: string; version: string | null; warning?: string }[];
    };
    const of = (h: FakeHost) => hosts.find((listed) => listed.host_id === h.hostId);
    expect(of(current)).toMatchObject({ version: MIN_HOST_AGENT_VERSION });
    expect(of(current)).not.toHaveProperty("warning");
    expect(of(newer)).not.toHaveProperty("warning");
    expect(of(old)).toMatchObject({
      version: "0.0.9",
      warning: expect.stringContaining(
        `older than ${MIN_HOST_AGENT_VERSION}, the oldest this Worker supports: upgrade it`,
      ),
    });
    expect(of(odd)?.warning).toContain('"dev-build" is not a version this Worker knows');
    // An outdated host still serves: refusing it would end what it runs.
    const { sessionId } = await spawn();
    expect(sessionId).toMatch(/^ses_/);
  });
});
