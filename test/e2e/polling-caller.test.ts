/**
 * The relay for a caller that never shows notifications to its model (Claude Code as a caller):
 * the official MCP SDK client, ignoring every notification, relays by polling `session events`
 * with `wait_seconds`; with `caller_presence: "deadline"` a caller that closes its MCP session
 * and comes back in a new one before the deadline still answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { runStep, spawnDroid, text } from "./support.js";

const GRACE_MS = 3_000;
const KEEPALIVE_MS = 1_000;

let stack: TestStack;
const callers: TestCaller[] = [];

beforeAll(async () => {
  stack = await TestStack.start({
    vars: { OUBLIETTE_CALLER_GRACE_MS: String(GRACE_MS), OUBLIETTE_KEEPALIVE_MS: String(KEEPALIVE_MS) },
  });
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
});

afterAll(async () => {
  await Promise.all(callers.map((c) => c.close()));
  await stack?.stop();
});

/** A caller that ignores notifications and polls the sessions it follows. */
async function pollingCaller(name: string): Promise<TestCaller> {
  const caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, name, { notifications: false });
  callers.push(caller);
  return caller;
}

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;
const isRequest = (sessionId: string) => (e: SessionEvent) =>
  e.type === "caller_tool_request" && e.session_id === sessionId;

describe("a caller that only polls session events with wait_seconds", () => {
  it("completes the relay", async () => {
    const caller = await pollingCaller("poller");
    caller.answerWith((request) => ({ result: { status: "sent", echo: request.arguments } }));
    const sessionId = await spawnDroid(caller);
    const out = await runStep(caller, sessionId, {
      op: "call",
      name: "ant_send_response",
      arguments: { message: "hi" },
    });
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ status: "sent", echo: { message: "hi" } });
    // Every event came from polling: no notification reached a handler.
    expect(caller.loggers).toEqual([]);
    expect(caller.events.some(isRequest(sessionId))).toBe(true);
  });

  it("is kept alive with progress while it waits", async () => {
    const caller = await pollingCaller("patient");
    const sessionId = await spawnDroid(caller, { tools: [] });
    const next = await caller.ok<{ next_index: number }>("session", { action: "get", session_id: sessionId });
    const { result, progress, ms } = await caller.callWithProgress("session", {
      action: "events",
      session_id: sessionId,
      since_index: next.next_index + 1000,
      wait_seconds: 3,
    });
    expect(ms).toBeGreaterThanOrEqual(3_000);
    expect(result.structuredContent).toMatchObject({ events: [] });
    expect(progress.length).toBeGreaterThanOrEqual(2);
  });
});

describe('caller_presence "deadline"', () => {
  it("lets a caller that closed its MCP session answer from a new one before the deadline", async () => {
    const first = await pollingCaller("one-shot-1");
    const sessionId = await spawnDroid(first, { callerPresence: "deadline", timeoutSeconds: 60 });
    const script = {
      id: "later",
      steps: [{ op: "call", id: "later", name: "ant_send_response", arguments: { message: "later" } }],
    };
    await first.ok("session", { action: "message", session_id: sessionId, message: JSON.stringify(script) });
    const request = (await first.waitFor(isRequest(sessionId))) as RequestEvent;
    await first.close(); // DELETE /mcp: with caller_presence stream the call would fail now
    await new Promise((r) => setTimeout(r, GRACE_MS + 1_500));

    const second = await pollingCaller("one-shot-2");
    const pending = await second.ok<{ open_requests: { request_id: string; arguments: unknown }[] }>(
      "session",
      { action: "pending", session_id: sessionId },
    );
    expect(pending.open_requests).toEqual([
      expect.objectContaining({ request_id: request.request_id, arguments: { message: "later" } }),
    ]);
    const answered = await second.respond(sessionId, request.request_id, { result: { status: "sent late" } });
    expect(answered.isError).toBeFalsy();

    second.follow(sessionId);
    const out = await second.waitForOutput(sessionId, (d) => d.op === "call" && d.id === "later");
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ status: "sent late" });
  });
});
