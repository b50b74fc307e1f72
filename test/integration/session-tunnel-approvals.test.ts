/**
 * The host-agent's session tunnel carrying permission questions, against a session object
 * played by a WebSocket server in this process: each goes out as `approval` whose request id is
 * the approval id, is re-sent under that id after every reconnect until decided, and is decided
 * once; a refusal is a deny by "error", the session's end here a deny by "ended".
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionTunnel } from "../../host-agent/src/tunnel/session-tunnel.js";
import { createLogger } from "../../lib/log.js";
import type { ApprovalRequest } from "../../protocol/approvals.js";
import { FakeSessionObject, type Frame, until } from "../support/fake-session-object.js";

const logger = createLogger({
  name: "tunnel-approvals-it",
  level: process.env.TEST_LOG_LEVEL ?? "silent",
  fd: 2,
});
const REQUEST: ApprovalRequest = { kind: "edit", path: "src/main.ts", diff: "+x", summary: "edit main" };

let object: FakeSessionObject;
let tunnel: SessionTunnel;

beforeEach(async () => {
  object = new FakeSessionObject("ses_0000000000000000000000c1");
  const workerUrl = await object.listen();
  tunnel = new SessionTunnel({
    workerUrl,
    hostToken: "host-token",
    hostId: "host-1",
    sessionId: object.sessionId,
    logger,
    timing: { heartbeatMs: 60_000, maxReconnectDelayMs: 50 },
    onConfig: () => {},
    onDroidMessage: async () => {},
    onEventsStored: () => {},
    onGone: () => {},
    onInterrupt: () => {},
    onStoredUsage: () => {},
  });
  tunnel.start();
  await until(() => tunnel.connected, "the tunnel");
});

afterEach(async () => {
  tunnel.close();
  await object.close();
});

describe("session tunnel: approvals", () => {
  it("sends a question as `approval` under its approval id, and re-sends it under that id after a reconnect", async () => {
    const id = "apr_0123456789abcdef0123456789abcdef";
    let settled = 0;
    const decision = tunnel.approval(id, "claude", REQUEST).then((d) => {
      settled += 1;
      return d;
    });
    await until(() => object.approvals().length === 1, "the approval request");
    const first = object.approvals()[0] as Frame;
    expect(first.id).toBe(id);
    expect(first.params).toEqual({ approval_id: id, agent: "claude", request: REQUEST });
    // Asked again while it waits (the runner re-sent it), it is the same question: nothing new goes out.
    const same = tunnel.approval(id, "claude", REQUEST);
    await new Promise((r) => setTimeout(r, 50));
    expect(object.approvals()).toHaveLength(1);

    first.ws.terminate();
    await until(() => object.hellos === 2, "the second hello");
    await until(() => object.approvals().length === 2, "the re-sent approval request");
    const second = object.approvals()[1] as Frame;
    expect(second.ws).not.toBe(first.ws);
    expect(second.id).toBe(id);
    expect(second.params).toEqual(first.params);

    object.send(second.ws, { id, result: { decision: "allow", scope: "session", by: "answer" } });
    expect(await decision).toEqual({ decision: "allow", scope: "session", by: "answer" });
    expect(await same).toEqual({ decision: "allow", scope: "session", by: "answer" });
    // A second answer to the same id changes nothing, and a reconnect re-sends nothing.
    object.send(second.ws, { id, result: { decision: "deny", scope: "once", by: "answer" } });
    second.ws.terminate();
    await until(() => object.hellos === 3, "the third hello");
    await new Promise((r) => setTimeout(r, 100));
    expect(object.approvals()).toHaveLength(2);
    expect(settled).toBe(1);
  });

  it("denies by error, with the refusal's message, a question the session object refuses", async () => {
    const id = "apr_refused000000000000000000000001";
    const decision = tunnel.approval(id, "codex", { kind: "shell", command: "ls", summary: "list" });
    await until(() => object.approvals().length === 1, "the approval request");
    const frame = object.approvals()[0] as Frame;
    object.send(frame.ws, { id, error: { code: -32601, message: "method not found: approval" } });
    expect(await decision).toEqual({
      decision: "deny",
      scope: "once",
      by: "error",
      message: "method not found: approval",
    });
  });

  it("denies by error an answer that is not a decision", async () => {
    const id = "apr_malformed00000000000000000000001";
    const decision = tunnel.approval(id, "codex", REQUEST);
    await until(() => object.approvals().length === 1, "the approval request");
    object.send((object.approvals()[0] as Frame).ws, { id, result: { decision: "maybe" } });
    expect(await decision).toMatchObject({ decision: "deny", by: "error" });
  });

  it("denies by ended every waiting question when the session ends on this host", async () => {
    const decisions = [
      tunnel.approval("apr_ended0000000000000000000000001", "claude", REQUEST),
      tunnel.approval("apr_ended0000000000000000000000002", "claude", REQUEST),
    ];
    await until(() => object.approvals().length === 2, "both approval requests");
    tunnel.failPending({
      ok: false,
      error: { reason: "session_ended", message: "the session ended on this host" },
    });
    for (const decision of decisions)
      expect(await decision).toEqual({
        decision: "deny",
        scope: "once",
        by: "ended",
        message: "the session ended",
      });
  });

  it("cancels a question at the session object by its approval id", async () => {
    const id = "apr_cancelled00000000000000000000001";
    const decision = tunnel.approval(id, "claude", REQUEST);
    await until(() => object.approvals().length === 1, "the approval request");
    tunnel.cancelApproval(id, "the runner cancelled it");
    expect(await decision).toMatchObject({
      decision: "deny",
      by: "ended",
      message: "the runner cancelled it",
    });
    await until(() => object.frames.some((f) => f.method === "notifications/cancelled"), "the cancellation");
    expect(object.frames.find((f) => f.method === "notifications/cancelled")?.params).toEqual({
      requestId: id,
      reason: "the runner cancelled it",
    });
  });
});
