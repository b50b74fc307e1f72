/**
 * A host that stays gone is noticed, and a host that comes back is reconciled: after the grace
 * period (here 8 s) its sessions end with a reason naming the host loss, their waiting calls fail
 * at once, a caller's late answer is refused (never "delivered"), and their placements are
 * released; a host-agent that starts reports the sessions it really runs and the ones it no
 * longer runs end the same way. Under the process runtime sessions end cleanly on a restart.
 */
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { projectOf, runStep, spawnDroid } from "./support.js";

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

// Long enough that a host-agent restart under a loaded CI machine comes back within it.
const GRACE_MS = 8_000;
let stack: TestStack;
let caller: TestCaller;
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });
const fast = { heartbeatMs: 500, reconnectMaxMs: 1_000 };

beforeAll(async () => {
  stack = await TestStack.start({
    vars: { OUBLIETTE_HOST_GRACE_MS: String(GRACE_MS), OUBLIETTE_HOST_WAIT_MS: "2000" },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

async function status(sessionId: string): Promise<string> {
  const info = await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId });
  return info.status;
}

async function ended(sessionId: string, timeoutMs = 20_000) {
  return (await caller.waitFor(
    (e) => e.type === "session_ended" && e.session_id === sessionId,
    timeoutMs,
    `session_ended of ${sessionId}`,
  )) as Extract<SessionEvent, { type: "session_ended" }>;
}

describe("a Docker host that stays gone", () => {
  it("ends its sessions after the grace period, fails their calls, refuses late answers, frees its place", async () => {
    const lost = await stack.addHost({
      runtime: "docker",
      image: dockerContext().droidImage,
      maxSessions: 1,
      ...fast,
    });
    const sessionId = await spawnDroid(caller);
    const before = caller.events.length;
    void runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} }, 30_000).catch(
      () => {},
    );
    const request = (await caller.waitFor(
      (e) =>
        e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
    )) as RequestEvent;

    lost.process.kill("SIGKILL");
    await lost.exited;
    const startedWaiting = Date.now();
    const end = await ended(sessionId);
    expect(Date.now() - startedWaiting).toBeGreaterThanOrEqual(GRACE_MS - 1_000);
    expect(end.reason).toMatch(/host \S+ lost: its host-agent was not connected/);
    expect(await status(sessionId)).toBe("lost");
    const failed = caller.events.find(
      (e) =>
        e.type === "caller_tool_failed" && e.session_id === sessionId && e.request_id === request.request_id,
    );
    expect(failed).toMatchObject({ reason: "host_lost" });
    const late = await caller.respond(sessionId, request.request_id, { result: "too late" });
    expect(late.isError).toBe(true);
    expect(JSON.stringify(late.content)).toMatch(/request_expired/);

    // Its place is free: a new host with room for one takes the next spawn.
    const replacement = await stack.addHost({
      runtime: "docker",
      image: dockerContext().droidImage,
      maxSessions: 1,
      ...fast,
    });
    const next = await spawnDroid(caller);
    expect(await status(next)).toBe("running");
    await caller.call("session", { action: "end", session_id: next });
    await replacement.stop();

    // The lost host comes back still running the session's agent in its project's container: it is
    // told to stop that session (the container is the project's, and stays).
    const projectId = await projectOf(caller, sessionId);
    const [left] = await docker.listContainers({ filters: { label: [`${PROJECT_LABEL}=${projectId}`] } });
    expect(left?.State).toBe("running");
    const back = await stack.restartHost(lost);
    await back.waitForLog(new RegExp(`"session":"${sessionId}".*"stopping session"`), 30_000);
    await back.stop();
  });
});

describe("the process runtime", () => {
  it("ends its sessions cleanly when the host-agent stops (SIGTERM)", async () => {
    const host = await stack.addHost({ runtime: "process", ...fast });
    const sessionId = await spawnDroid(caller);
    host.process.kill("SIGTERM");
    await host.exited;
    const end = await ended(sessionId, 15_000);
    expect(end.reason).toMatch(/host-agent shut down/);
  });

  it("ends the sessions a restarted host-agent no longer runs (SIGKILL, then start)", async () => {
    const host = await stack.addHost({ runtime: "process", ...fast });
    const sessionId = await spawnDroid(caller);
    host.process.kill("SIGKILL");
    await host.exited;
    const again = await stack.restartHost(host);
    const end = await ended(sessionId, 15_000);
    expect(end.reason).toMatch(/came back without this session/);
    expect(await status(sessionId)).toBe("lost");
    await again.stop();
  });
});

describe("capacity", () => {
  it("says a full host is full (with its capacity), and that no host is connected when none is", async () => {
    // Only this test's host may take spawns.
    await Promise.all(stack.hosts.map((h) => h.stop()));
    const host = await stack.addHost({ runtime: "process", maxSessions: 1, ...fast });
    const first = await spawnDroid(caller);
    const full = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "ant",
    });
    expect(full.isError).toBe(true);
    expect(JSON.stringify(full.structuredContent)).toMatch(/host_full/);
    expect(JSON.stringify(full.content)).toMatch(/runs 1 of 1/);
    await caller.call("session", { action: "end", session_id: first });
    await host.stop();
    const none = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "ant",
    });
    expect(none.isError).toBe(true);
    expect(JSON.stringify(none.structuredContent)).toMatch(/no_host/);
  });
});
