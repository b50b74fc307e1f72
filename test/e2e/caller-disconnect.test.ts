/**
 * REQ-CTR-001 "caller disconnected before response": the droid gets a connection error at once
 * when the caller ends its MCP session, and within a few seconds when its stream just drops —
 * never only at the (here 60 s) timeout.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { runStep, spawnDroid, text } from "./support.js";

const GRACE_MS = 3_000;
const KEEPALIVE_MS = 500;

let stack: TestStack;
/**
 * Reads the droid's output with another token (admin scope, not the owner): a reader that is not
 * the owner does not count as the caller being present.
 */
let observer: TestCaller;

beforeAll(async () => {
  stack = await TestStack.start({
    vars: { OUBLIETTE_CALLER_GRACE_MS: String(GRACE_MS), OUBLIETTE_KEEPALIVE_MS: String(KEEPALIVE_MS) },
  });
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
});

afterAll(async () => {
  await observer?.close();
  await stack?.stop();
});

/** Spawns a droid owned by a fresh caller and starts a call that caller will never answer. */
async function pendingCall() {
  const caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "leaving-caller");
  const sessionId = await spawnDroid(caller);
  // The droid's outcome is read by the observer: this caller goes away before it arrives.
  runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} }, 20_000).catch(
    () => {},
  );
  await caller.waitFor((e) => e.type === "caller_tool_request" && e.session_id === sessionId);
  return { caller, sessionId };
}

/** The droid's output for a call, read by another connection of the same owner. */
async function droidResult(sessionId: string, since: number) {
  observer ??= await TestCaller.connect(stack.mcpUrl, stack.otherToken, "observer");
  const deadline = Date.now() + 20_000;
  for (let attempt = 0; Date.now() < deadline && attempt < 200; attempt++) {
    const page = await observer.ok<{ events: { type: string; data?: Record<string, unknown> }[] }>(
      "session",
      {
        action: "events",
        session_id: sessionId,
        since_index: since,
        limit: 1000,
      },
    );
    const call = page.events.find((e) => e.type === "droid_output" && e.data?.op === "call");
    if (call?.data) return call.data;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the droid never reported the call's outcome");
}

it("fails the droid's call at once when the caller ends its MCP session", async () => {
  const { caller, sessionId } = await pendingCall();
  const since = caller.events.at(-1)?.index ?? 0;
  const endedAt = Date.now();
  await caller.close(); // DELETE /mcp
  const out = await droidResult(sessionId, since);
  const tookMs = Date.now() - endedAt;
  expect(out.is_error).toBe(true);
  expect(text(out)).toMatch(/ended its MCP session/);
  // "At once": well inside the grace period a dropped stream would get.
  expect(tookMs).toBeLessThan(GRACE_MS + 1_000);
});

it("fails the droid's call within a few seconds when the caller's stream drops without a goodbye", async () => {
  const { caller, sessionId } = await pendingCall();
  const since = caller.events.at(-1)?.index ?? 0;
  const droppedAt = Date.now();
  await caller.client.close(); // aborts the GET stream; no DELETE
  const out = await droidResult(sessionId, since);
  const tookMs = Date.now() - droppedAt;
  expect(out.is_error).toBe(true);
  expect(text(out)).toMatch(/disconnected and did not reconnect/);
  expect(tookMs).toBeGreaterThanOrEqual(GRACE_MS - 200);
  expect(tookMs).toBeLessThan(KEEPALIVE_MS + GRACE_MS + 4_000);
});

it("keeps the call alive when the caller's stream drops and comes back within the grace period", async () => {
  // The caller reaches the Worker through a proxy that can cut its connections (a network blip).
  const proxy = await TcpProxy.start(Number(new URL(stack.url).port));
  const caller = await TestCaller.connect(new URL("/mcp", proxy.url), stack.adminToken, "flaky-caller", {
    reconnectAttempts: 20,
  });
  try {
    const sessionId = await spawnDroid(caller);
    const call = runStep(
      caller,
      sessionId,
      { op: "call", id: "survivor", name: "ant_send_response", arguments: {} },
      20_000,
    );
    const request = await caller.waitFor(
      (e) => e.type === "caller_tool_request" && e.session_id === sessionId,
    );
    const drops = async () =>
      (await readFile(stack.worker.logFile, "utf8")).split("MCP event stream dropped").length;
    const dropsBefore = await drops();
    proxy.cut();
    // The Worker notices the dead stream at a keep-alive; then the network comes back and the
    // SDK client (retrying every second) reopens its stream within the grace period.
    await expect.poll(drops, { timeout: 5_000, interval: 50 }).toBeGreaterThan(dropsBefore);
    proxy.restore();
    // Longer than keep-alive + grace: had the caller not come back, the call would have failed by now.
    await new Promise((r) => setTimeout(r, KEEPALIVE_MS + GRACE_MS + 1_000));
    if (request.type !== "caller_tool_request") throw new Error("unexpected event");
    await caller.respond(sessionId, request.request_id, { result: "still here" });
    const out = await call;
    expect(out.is_error).toBe(false);
    expect(text(out)).toBe("still here");
  } finally {
    await caller.close();
    await proxy.close();
  }
});
