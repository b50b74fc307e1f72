/**
 * The host-agent's caller tool calls: relayed by call id, cancelled at the session object when
 * the droid cancels or its connection does not come back, answered from a kept outcome when a
 * restarted container-client re-sends, and ended by the backstop only when nothing answers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallerCalls } from "../../host-agent/src/sessions/caller-calls.js";
import { createLogger } from "../../lib/log.js";
import type { HandlerContext } from "../../lib/rpc/peer.js";
import type { CallerToolOutcome } from "../../protocol/caller-tools.js";
import type { JsonObject } from "../../protocol/json.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";

const logger = createLogger({ name: "calls-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

let relayed: { callId: string; tool: string; args: JsonObject; resolve(o: CallerToolOutcome): void }[];
let cancelled: { callId: string; reason: string }[];
let calls: CallerCalls;

function ctx(id: string | number = 1): HandlerContext & { abort(code: number): void } {
  const controller = new AbortController();
  return {
    id,
    signal: controller.signal,
    abort: (code) =>
      controller.abort(new RpcError(code, code === RpcErrorCode.ConnectionClosed ? "closed" : "cancelled")),
  };
}

beforeEach(() => {
  vi.useFakeTimers();
  relayed = [];
  cancelled = [];
  calls = new CallerCalls({
    relay: (callId, tool, args) => new Promise((resolve) => relayed.push({ callId, tool, args, resolve })),
    cancel: (callId, reason) => {
      cancelled.push({ callId, reason });
      const call = relayed.find((r) => r.callId === callId);
      call?.resolve({ ok: false, error: { reason: "cancelled", message: reason } });
    },
    backstopMs: () => 10_000,
    logger,
    reclaimGraceMs: 1_000,
    keepOutcomeMs: 5_000,
  });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("CallerCalls", () => {
  it("relays a call once and answers with the session object's outcome", async () => {
    const running = calls.run({ call_id: "c1", tool: "t", arguments: { a: 1 } }, ctx());
    expect(relayed).toMatchObject([{ callId: "c1", tool: "t", args: { a: 1 } }]);
    relayed[0]?.resolve({ ok: true, result: "done" });
    await expect(running).resolves.toBe("done");
  });

  it("answers a failure as a ServerError with the reason", async () => {
    const running = calls.run({ call_id: "c1", tool: "t", arguments: {} }, ctx());
    relayed[0]?.resolve({ ok: false, error: { reason: "timeout", message: "too late" } });
    await expect(running).rejects.toMatchObject({
      code: RpcErrorCode.ServerError,
      data: { reason: "timeout" },
    });
  });

  it("refuses arguments over the budget without relaying them", async () => {
    const big = { pad: "x".repeat(300 * 1024) };
    await expect(calls.run({ call_id: "c1", tool: "t", arguments: big }, ctx())).rejects.toMatchObject({
      data: { reason: "too_large" },
    });
    expect(relayed).toHaveLength(0);
  });

  it("cancels at the session object when the droid cancels", async () => {
    const c = ctx();
    const running = calls.run({ call_id: "c1", tool: "t", arguments: {} }, c);
    c.abort(RpcErrorCode.RequestCancelled);
    await expect(running).rejects.toMatchObject({ code: RpcErrorCode.RequestCancelled });
    expect(cancelled).toEqual([{ callId: "c1", reason: "the droid cancelled the call" }]);
  });

  it("a call re-sent after its connection closed is the same call, answered once", async () => {
    const first = ctx();
    const lost = calls.run({ call_id: "c1", tool: "t", arguments: {} }, first);
    first.abort(RpcErrorCode.ConnectionClosed);
    await expect(lost).rejects.toMatchObject({ code: RpcErrorCode.ConnectionClosed });
    const again = calls.run({ call_id: "c1", tool: "t", arguments: {} }, ctx(2));
    expect(relayed).toHaveLength(1);
    vi.advanceTimersByTime(5_000);
    relayed[0]?.resolve({ ok: true, result: "once" });
    await expect(again).resolves.toBe("once");
    expect(cancelled).toEqual([]);
  });

  it("cancels a call whose connection closed and that nobody re-sent within the grace", async () => {
    const first = ctx();
    const lost = calls.run({ call_id: "c1", tool: "t", arguments: {} }, first);
    first.abort(RpcErrorCode.ConnectionClosed);
    await expect(lost).rejects.toBeDefined();
    vi.advanceTimersByTime(1_001);
    expect(cancelled).toEqual([{ callId: "c1", reason: "the droid's MCP client disconnected" }]);
  });

  it("answers a re-send from the kept outcome when the outcome came while nobody waited", async () => {
    const first = ctx();
    const lost = calls.run({ call_id: "c1", tool: "t", arguments: {} }, first);
    first.abort(RpcErrorCode.ConnectionClosed);
    await expect(lost).rejects.toBeDefined();
    relayed[0]?.resolve({ ok: true, result: "kept" });
    await vi.advanceTimersByTimeAsync(500);
    await expect(calls.run({ call_id: "c1", tool: "t", arguments: {} }, ctx(2))).resolves.toBe("kept");
    expect(relayed).toHaveLength(1);
  });

  it("gives up only at the backstop, with its own reason, and cancels at the session object", async () => {
    const running = calls.run({ call_id: "c1", tool: "t", arguments: {} }, ctx());
    const outcome = running.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(cancelled).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(await outcome).toMatchObject({ data: { reason: "worker_unreachable" } });
    expect(cancelled).toHaveLength(1);
  });
});

describe("CallerCalls memory", () => {
  it("forgets a call once its waiter has the answer, and keeps one nobody received", async () => {
    const answered = calls.run({ call_id: "c1", tool: "t", arguments: {} }, ctx());
    relayed[0]?.resolve({ ok: true, result: 1 });
    await answered;
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.size).toBe(0);
    const first = ctx();
    const lost = calls.run({ call_id: "c2", tool: "t", arguments: {} }, first);
    first.abort(RpcErrorCode.ConnectionClosed);
    await expect(lost).rejects.toBeDefined();
    relayed[1]?.resolve({ ok: true, result: 2 });
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.size).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls.size).toBe(0);
  });
});
