/**
 * The host-agent's permission questions: relayed once per approval id however often the runner
 * asks, answered with the session object's decision, cancelled at the object when the runner
 * cancels or its connection does not come back for the question within the grace.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApprovalRelay } from "../../host-agent/src/sessions/approval-relay.js";
import { createLogger } from "../../lib/log.js";
import type { HandlerContext } from "../../lib/rpc/peer.js";
import type { ApprovalDecision } from "../../protocol/approvals.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import type { ApprovalParams } from "../../protocol/socket.js";

const logger = createLogger({
  name: "approval-relay-test",
  level: process.env.TEST_LOG_LEVEL ?? "silent",
  fd: 2,
});
const ALLOW: ApprovalDecision = { decision: "allow", scope: "once", by: "answer" };

let relayed: { id: string; resolve(d: ApprovalDecision): void }[];
let cancelled: { id: string; reason: string }[];
let relay: ApprovalRelay;

function params(id: string): ApprovalParams {
  return {
    session_id: "ses_0000000000000000000000e1",
    approval_id: id,
    agent: "claude",
    request: { kind: "read", path: ".env", summary: "read the env file" },
  };
}

function ctx(id: string): HandlerContext & { abort(code: number): void } {
  const controller = new AbortController();
  return {
    id,
    signal: controller.signal,
    abort: (code) =>
      controller.abort(
        new RpcError(code, code === RpcErrorCode.ConnectionClosed ? "closed" : "the agent was stopped"),
      ),
  };
}

beforeEach(() => {
  vi.useFakeTimers();
  relayed = [];
  cancelled = [];
  relay = new ApprovalRelay({
    relay: (id) => new Promise((resolve) => relayed.push({ id, resolve })),
    cancel: (id, reason) => cancelled.push({ id, reason }),
    logger,
    reclaimGraceMs: 1_000,
  });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("ApprovalRelay", () => {
  it("relays a question once however often it is asked, and answers every asker with the decision", async () => {
    const first = relay.run(params("apr_000000001"), ctx("apr_000000001"));
    const again = relay.run(params("apr_000000001"), ctx("apr_000000001"));
    expect(relayed.map((r) => r.id)).toEqual(["apr_000000001"]);
    relayed[0]?.resolve(ALLOW);
    await expect(first).resolves.toEqual(ALLOW);
    await expect(again).resolves.toEqual(ALLOW);
    expect(relay.size).toBe(0);
    expect(cancelled).toEqual([]);
  });

  it("cancels at the session object at once when the runner cancels", async () => {
    const c = ctx("apr_000000002");
    const running = relay.run(params("apr_000000002"), c);
    c.abort(RpcErrorCode.RequestCancelled);
    await expect(running).rejects.toMatchObject({ code: RpcErrorCode.RequestCancelled });
    expect(cancelled).toEqual([{ id: "apr_000000002", reason: "the agent was stopped" }]);
    expect(relay.size).toBe(0);
  });

  it("cancels a question whose connection closed when the runner does not ask again within the grace", async () => {
    const c = ctx("apr_000000003");
    const running = relay.run(params("apr_000000003"), c);
    c.abort(RpcErrorCode.ConnectionClosed);
    await expect(running).rejects.toMatchObject({ code: RpcErrorCode.ConnectionClosed });
    await vi.advanceTimersByTimeAsync(999);
    expect(cancelled).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(cancelled).toEqual([
      { id: "apr_000000003", reason: "the runner did not ask again after its connection closed" },
    ]);
  });

  it("keeps a question the runner asks again on its next connection, and answers it there", async () => {
    const c = ctx("apr_000000004");
    const running = relay.run(params("apr_000000004"), c);
    c.abort(RpcErrorCode.ConnectionClosed);
    await expect(running).rejects.toMatchObject({ code: RpcErrorCode.ConnectionClosed });
    await vi.advanceTimersByTimeAsync(500);
    const again = relay.run(params("apr_000000004"), ctx("apr_000000004"));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(cancelled).toEqual([]);
    expect(relayed).toHaveLength(1);
    relayed[0]?.resolve(ALLOW);
    await expect(again).resolves.toEqual(ALLOW);
  });
});
