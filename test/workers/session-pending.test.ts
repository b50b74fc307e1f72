import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { okResult, PendingSchema, pending } from "./support/mcp-spawn.js";
import { liveSession, respond } from "./support/session.js";

/** The open caller tool requests of a session: `session pending` and `session get`. */

afterEach(disconnectAll);

/**
 * A live session with two calls waiting for the caller, call-1 reaching the session object before
 * call-2, and an MCP session of its owner. Each call is through before the next is sent: two sent
 * together may be taken in either order, and may share a deadline.
 */
async function twoWaiting() {
  const s = await liveSession({ callerTimeoutMs: 60_000 });
  const mcp = await initialize();
  s.tunnel.call("call-1", "send_response", { text: "first" });
  await s.tunnel.barrier();
  s.tunnel.call("call-2", "send_response", { text: "second" });
  await s.tunnel.barrier();
  return { ...s, mcp };
}

describe("open caller tool requests", () => {
  it("are listed by session pending with their arguments and deadline, soonest first", async () => {
    const s = await twoWaiting();
    const listed = await pending(s.mcp, s.sessionId);
    expect(listed).toMatchObject({
      session_id: s.sessionId,
      status: "starting",
      caller_id: "ant",
      caller_presence: "stream",
      pending_caller_requests: 2,
      open_requests: [
        { request_id: "call-1", tool: "send_response", arguments: { text: "first" } },
        { request_id: "call-2", tool: "send_response", arguments: { text: "second" } },
      ],
    });
    const deadline = Date.parse(listed.open_requests[0]?.deadline ?? "");
    expect(deadline).toBeGreaterThan(Date.now() + 50_000);
  });

  it("are listed by session get too, next to their count", async () => {
    const s = await twoWaiting();
    const info = okResult(await callTool(s.mcp, "session", { action: "get", session_id: s.sessionId }));
    const { open_requests, pending_caller_requests } = PendingSchema.parse(info);
    expect(pending_caller_requests).toBe(2);
    expect(open_requests.map((r) => r.request_id)).toEqual(["call-1", "call-2"]);
  });

  it("drop a request once it is answered, and once it fails", async () => {
    const s = await twoWaiting();
    expect(await respond(s.sessionId, "call-1", { result: "done" })).toMatchObject({ ok: true });
    expect((await pending(s.mcp, s.sessionId)).open_requests.map((r) => r.request_id)).toEqual(["call-2"]);

    s.tunnel.cancel("call-2", "the droid gave up");
    await s.tunnel.barrier();
    expect(await pending(s.mcp, s.sessionId)).toMatchObject({
      pending_caller_requests: 0,
      open_requests: [],
    });
  });
});
