/**
 * Three hosts, each the built host-agent file under Docker, behind one Worker: a project's
 * sessions stay on its host; a drained host keeps its running sessions while the project's next
 * one moves to another host, saying its workspace stayed behind; a host killed with SIGKILL
 * leaves the other hosts' sessions untouched, is listed as lost once the grace period is over,
 * its project refuses a spawn (naming the host) until one asks to relocate, and revoking it takes
 * it off the list. Real wrangler dev, real host-agent processes, real Docker, the MCP SDK caller.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { followUntilReady, runStep, SEND_RESPONSE, text } from "./support.js";

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;
interface Spawned {
  session_id: string;
  host_id: string;
  moved?: { from_host: string; to_host: string; reason: string; workspace: string; message: string };
}
interface ListedHost {
  host_id: string;
  connected: boolean;
  draining: boolean;
  missing_since: string | null;
  lost_since: string | null;
}

const GRACE_MS = 4_000;
let stack: TestStack;
let caller: TestCaller;
let hosts: HostAgent[];

beforeAll(async () => {
  stack = await TestStack.start({ vars: { OUBLIETTE_HOST_GRACE_MS: String(GRACE_MS) } });
  hosts = [];
  for (let i = 0; i < 3; i++)
    hosts.push(
      await stack.addHost({
        runtime: "docker",
        image: dockerContext().droidImage,
        // The faults close the tunnel's sockets, so they are seen at once; the heartbeat only finds a
        // silent peer, and a tighter one mistakes a loaded machine's pause for a dead tunnel.
        heartbeatMs: 2_000,
        reconnectMaxMs: 1_000,
      }),
    );
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 180_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

async function spawnIn(projectId: string, extra: Record<string, unknown> = {}): Promise<Spawned> {
  const spawned = await caller.ok<Spawned>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    caller_id: "ant",
    caller_tools: [SEND_RESPONSE],
    ...extra,
  });
  await followUntilReady(caller, spawned.session_id, "ant", [SEND_RESPONSE]);
  return spawned;
}

/** A relayed call from the session's droid, answered by the caller: the session is served. */
async function roundTrip(sessionId: string, tag: string): Promise<void> {
  const before = caller.events.length;
  const call = runStep(caller, sessionId, {
    op: "call",
    id: tag,
    name: "ant_send_response",
    arguments: { tag },
  });
  const request = (await caller.waitFor(
    (e) =>
      e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
  )) as RequestEvent;
  await caller.respond(sessionId, request.request_id, { result: `answered ${tag}` });
  const out = await call;
  expect(out.is_error).toBe(false);
  expect(text(out)).toBe(`answered ${tag}`);
}

async function listed(hostId: string): Promise<ListedHost | undefined> {
  const { hosts: all } = await caller.ok<{ hosts: ListedHost[] }>("host", { action: "list" });
  return all.find((h) => h.host_id === hostId);
}

const agentOf = (hostId: string) => {
  const agent = hosts.find((h) => h.hostId === hostId);
  if (!agent) throw new Error(`no host-agent ${hostId} in this stack`);
  return agent;
};

describe("three hosts", () => {
  let first: Spawned;
  let projectA: string;
  /** Sessions started so far that still run. */
  const running: Spawned[] = [];

  it("keep a project's sessions on its host", async () => {
    projectA = await caller.newProject();
    first = await spawnIn(projectA);
    const second = await spawnIn(projectA);
    running.push(first, second);
    expect(second.host_id).toBe(first.host_id);
    expect(hosts.map((h) => h.hostId)).toContain(first.host_id);
    await roundTrip(second.session_id, "sticky");
  }, 180_000);

  it("drain: the running session stays and is served; the project's next session moves, saying so", async () => {
    await caller.ok("host", { action: "drain", host_id: first.host_id });
    expect(await listed(first.host_id)).toMatchObject({ connected: true, draining: true });
    const moved = await spawnIn(projectA);
    running.push(moved);
    expect(moved.host_id).not.toBe(first.host_id);
    expect(moved.moved).toMatchObject({
      from_host: first.host_id,
      to_host: moved.host_id,
      reason: "draining",
      workspace: "empty",
    });
    await roundTrip(first.session_id, "on-the-drained-host");
    await roundTrip(moved.session_id, "on-the-new-host");
    await caller.ok("host", { action: "drain", host_id: first.host_id, drain: false });
  }, 180_000);

  it("a host killed with SIGKILL leaves the others' sessions untouched; it is lost, then revoked", async () => {
    // A new project goes to the host with the most room: the one running nothing yet.
    const projectB = await caller.newProject();
    const onB = await spawnIn(projectB);
    const victim = agentOf(onB.host_id);
    const others = running.filter((s) => s.host_id !== victim.hostId);
    // The others run on both remaining hosts.
    expect(new Set(others.map((s) => s.host_id)).size).toBe(2);
    victim.process.kill("SIGKILL");
    await victim.exited;
    for (const [i, s] of others.entries()) {
      expect(s.host_id).not.toBe(victim.hostId);
      await roundTrip(s.session_id, `survivor-${i}`);
    }
    // Past the grace period the killed host's session ends as lost, and the host is listed as lost.
    await caller.waitFor(
      (e) => e.type === "session_ended" && e.session_id === onB.session_id && e.reason.includes("lost"),
      GRACE_MS * 10,
    );
    await expect
      .poll(async () => (await listed(victim.hostId))?.lost_since ?? null, { timeout: GRACE_MS * 5 })
      .not.toBeNull();
    expect(await listed(victim.hostId)).toMatchObject({ connected: false });
    for (const [i, s] of others.entries()) await roundTrip(s.session_id, `still-${i}`);

    // Its project's workspace is on the lost host: a spawn says so, until it asks to relocate.
    const refused = await caller.call("session", {
      action: "spawn",
      project_id: projectB,
      new_session: true,
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain(`lives on host ${victim.hostId}, which is lost`);
    const relocated = await spawnIn(projectB, { relocate: true });
    expect(relocated.host_id).not.toBe(victim.hostId);
    expect(relocated.moved).toMatchObject({ from_host: victim.hostId, reason: "relocated" });
    await roundTrip(relocated.session_id, "relocated");

    await caller.ok("host", { action: "revoke", host_id: victim.hostId });
    expect(await listed(victim.hostId)).toBeUndefined();
  }, 240_000);
});
