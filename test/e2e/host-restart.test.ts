/**
 * A host-agent restart loses nothing (Docker's live-restore is the model): the host-agent is
 * killed with SIGKILL or stopped with SIGTERM and started again with the same host id; the
 * droid's container keeps running, the new host-agent re-adopts it and serves its socket again,
 * the runner and container-client reconnect, and every call, message and event arrives exactly
 * once. Real wrangler dev, real host-agent processes, real Docker, the official MCP SDK caller.
 */
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { projectOf, runStep, spawnDroid, text } from "./support.js";

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

let stack: TestStack;
let host: HostAgent;
let caller: TestCaller;
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });

beforeAll(async () => {
  stack = await TestStack.start();
  host = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    heartbeatMs: 500,
    reconnectMaxMs: 1_000,
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
});

/** The session's container: its project's (each spawn here has a project of its own). */
async function containerOf(sessionId: string) {
  const [container] = await docker.listContainers({
    all: true,
    filters: { label: [`${PROJECT_LABEL}=${await projectOf(caller, sessionId)}`] },
  });
  return container;
}

/** Starts a droid call the caller does not answer yet; resolves once the caller has the request. */
async function pendingCall(sessionId: string, id: string) {
  const before = caller.events.length;
  const call = runStep(
    caller,
    sessionId,
    { op: "call", id, name: "ant_send_response", arguments: { id } },
    90_000,
  );
  const request = (await caller.waitFor(
    (e) =>
      e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
  )) as RequestEvent;
  return { call, request };
}

async function stopHost(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
  host.process.kill(signal);
  await host.exited;
}

describe.each(["SIGKILL", "SIGTERM"] as const)("a host-agent stopped with %s and started again", (signal) => {
  it("keeps the droid and completes the call pending across the restart, answered while it was down", async () => {
    const sessionId = await spawnDroid(caller);
    const container = await containerOf(sessionId);
    const { call, request } = await pendingCall(sessionId, `pending-${signal}`);

    await stopHost(signal);
    // The container is not the host-agent's child: it keeps running.
    expect((await containerOf(sessionId))?.State).toBe("running");
    // The caller's answer is accepted: the session object holds it for the droid.
    const answered = await caller.respond(sessionId, request.request_id, {
      result: `answered during the ${signal} restart`,
    });
    expect(answered.isError).toBeFalsy();

    host = await stack.restartHost(host);
    const out = await call;
    expect(out.is_error).toBe(false);
    expect(text(out)).toBe(`answered during the ${signal} restart`);
    // Same container, same session, still running; the request was made once.
    expect((await containerOf(sessionId))?.Id).toBe(container?.Id);
    const info = await caller.ok<{ status: string; pending_caller_requests: number }>("session", {
      action: "get",
      session_id: sessionId,
    });
    expect(info).toMatchObject({ status: "running", pending_caller_requests: 0 });
    const requests = caller.events.filter(
      (e) => e.type === "caller_tool_request" && e.session_id === sessionId,
    );
    expect(new Set(requests.map((r) => (r as RequestEvent).request_id)).size).toBe(1);
    expect(caller.events.some((e) => e.type === "session_ended" && e.session_id === sessionId)).toBe(false);
  });

  it("delivers what happened while it was down: the droid's calls, output and messages, once each", async () => {
    const sessionId = await spawnDroid(caller);
    caller.answerWith((r) =>
      r.session_id === sessionId ? { result: `late ${String(r.arguments.n)}` } : "ignore",
    );
    try {
      // The droid waits until the host-agent is gone, then calls and prints.
      const script = caller.runScript(
        sessionId,
        {
          id: `while-down-${signal}`,
          steps: [
            { op: "print", data: "armed" },
            { op: "sleep", ms: 1_500 },
            { op: "call", id: "made-while-down", name: "ant_send_response", arguments: { n: 1 } },
            { op: "print", data: "printed after the call" },
          ],
        },
        90_000,
      );
      await caller.waitForOutput(sessionId, (d) => d.op === "print" && d.data === "armed");
      await stopHost(signal);
      // A message sent while the host-agent is away reaches the droid after the restart, once.
      await caller.ok("session", {
        action: "message",
        session_id: sessionId,
        message: JSON.stringify({
          id: `message-while-down-${signal}`,
          steps: [{ op: "print", data: "message" }],
        }),
      });
      await new Promise((r) => setTimeout(r, 2_500));
      host = await stack.restartHost(host);
      await script;
      await caller.waitForOutput(
        sessionId,
        (d) => d.op === "done" && d.id === `message-while-down-${signal}`,
        30_000,
      );
      const outputs = caller.droidOutputs(sessionId);
      const call = outputs.filter((d) => d.id === "made-while-down");
      expect(call).toHaveLength(1);
      expect(call[0]).toMatchObject({ is_error: false });
      expect(text(call[0] ?? {})).toBe("late 1");
      expect(outputs.filter((d) => d.op === "print" && d.data === "printed after the call")).toHaveLength(1);
      expect(outputs.filter((d) => d.op === "print" && d.data === "message")).toHaveLength(1);
      // No output line came twice (events are idempotent by seq end to end).
      const indexes = caller.events.filter((e) => e.session_id === sessionId).map((e) => e.index);
      expect(new Set(indexes).size).toBe(indexes.length);
    } finally {
      caller.answerWith(() => "ignore");
    }
  });
});

it("keeps counting the re-adopted sessions against --max-sessions, and frees them when they end", async () => {
  const small = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    heartbeatMs: 500,
    reconnectMaxMs: 1_000,
    maxSessions: 1,
  });
  // Only the small host has room from here on: the first host is stopped for this test.
  await stopHost("SIGTERM");
  try {
    const first = await spawnDroid(caller);
    small.process.kill("SIGKILL");
    await small.exited;
    const again = await stack.restartHost(small);
    const full = await caller.call("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "ant",
    });
    expect(full.isError).toBe(true);
    expect(JSON.stringify(full.content)).toMatch(/host_full|1 of 1/);
    await caller.call("session", { action: "end", session_id: first });
    const next = await spawnDroid(caller);
    expect(next).toMatch(/^ses_/);
    // The first session ended; its project's container stays (a project owns its container).
    expect(await caller.ok("session", { action: "get", session_id: first })).toMatchObject({
      status: "ended",
    });
    await caller.call("session", { action: "end", session_id: next });
    await again.stop();
  } finally {
    host = await stack.restartHost(host);
  }
});
