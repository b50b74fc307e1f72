/** Two RpcPeers linked in memory: the request/result/error/cancel family and the method table. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { defineRequest } from "../../protocol/rpc/method.js";

/** A test method: any params, any result. */
const method = (name: string) => defineRequest(name, { params: z.unknown(), result: z.unknown() });

const logger = createLogger({ name: "peer-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

/** Two peers whose sends arrive at the other asynchronously, like a real transport. */
function pair(maxMessageBytes = 64 * 1024) {
  const sent: string[] = [];
  let a!: RpcPeer;
  let b!: RpcPeer;
  a = new RpcPeer({
    send: (text) => {
      sent.push(text);
      setImmediate(() => b.receive(text));
      return true;
    },
    maxMessageBytes,
    logger,
  });
  b = new RpcPeer({
    send: (text) => {
      setImmediate(() => a.receive(text));
      return true;
    },
    maxMessageBytes,
    logger,
  });
  return { a, b, sent };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("RpcPeer", () => {
  it("dispatches through the method table, validating params", async () => {
    const { a, b } = pair();
    b.handle(
      defineRequest("add", { params: z.object({ x: z.number(), y: z.number() }), result: z.number() }),
      ({ x, y }) => x + y,
    );
    expect(await a.request("add", { x: 2, y: 3 })).toBe(5);
    await expect(a.request("add", { x: "2" })).rejects.toMatchObject({ code: RpcErrorCode.InvalidParams });
    await expect(a.request("nope", {})).rejects.toMatchObject({ code: RpcErrorCode.MethodNotFound });
  });

  it("turns a thrown RpcError into that error and anything else into an internal error", async () => {
    const { a, b } = pair();
    b.handle(method("typed"), () => {
      throw new RpcError(RpcErrorCode.ServerError, "caller said no", { reason: "caller_error" });
    });
    b.handle(method("buggy"), () => {
      throw new TypeError("x is undefined");
    });
    const typed = await a.request("typed", {}).catch((e: unknown) => e);
    expect(typed).toMatchObject({ code: RpcErrorCode.ServerError, data: { reason: "caller_error" } });
    const buggy = await a.request("buggy", {}).catch((e: unknown) => e);
    expect(buggy).toMatchObject({ code: RpcErrorCode.InternalError, message: "internal error" });
  });

  it("cancels: the caller's abort reaches the handler's signal as RequestCancelled", async () => {
    const { a, b } = pair();
    let reason: unknown;
    const seen = new Promise<void>((resolve) =>
      b.handle(method("wait"), (_p, ctx) => {
        ctx.signal.addEventListener("abort", () => {
          reason = ctx.signal.reason;
          resolve();
        });
        return new Promise(() => {});
      }),
    );
    const controller = new AbortController();
    const call = a.request("wait", {}, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error("droid gave up"));
    await expect(call).rejects.toMatchObject({ code: RpcErrorCode.RequestCancelled });
    await seen;
    expect(reason).toMatchObject({ code: RpcErrorCode.RequestCancelled, message: "droid gave up" });
  });

  it("closing rejects pending requests with ConnectionClosed and aborts handlers", async () => {
    const { a, b } = pair();
    let aborted = false;
    let entered: () => void = () => {};
    const handling = new Promise<void>((resolve) => {
      entered = resolve;
    });
    b.handle(method("wait"), (_p, ctx) => {
      ctx.signal.addEventListener("abort", () => {
        aborted = true;
      });
      entered();
      return new Promise(() => {});
    });
    const call = a.request("wait", {});
    // Closed only once the handler runs (a fixed pause was not always enough on a busy machine).
    await handling;
    a.close();
    b.close();
    await expect(call).rejects.toMatchObject({ code: RpcErrorCode.ConnectionClosed });
    expect(aborted).toBe(true);
    await expect(a.request("wait", {})).rejects.toMatchObject({ code: RpcErrorCode.ConnectionClosed });
  });

  it("times out a request with a reason and tells the peer", async () => {
    const { a, b, sent } = pair();
    b.handle(method("never"), () => new Promise(() => {}));
    const error = await a
      .request("never", {}, { timeoutMs: 20, timeoutMessage: "too slow" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: RpcErrorCode.ServerError,
      message: "too slow",
      data: { reason: "timeout" },
    });
    expect(sent.some((t) => t.includes("notifications/cancelled"))).toBe(true);
  });

  it("refuses to send a request over the message limit, and answers an oversized result with too_large", async () => {
    const { a, b } = pair(1024);
    await expect(a.request("x", { pad: "p".repeat(2000) })).rejects.toMatchObject({
      data: { reason: "too_large" },
    });
    b.handle(method("big"), () => "r".repeat(2000));
    await expect(a.request("big", {})).rejects.toMatchObject({ data: { reason: "too_large" } });
  });

  it("refuses a second request with an id already in flight", async () => {
    const { a, b } = pair();
    b.handle(method("wait"), () => new Promise(() => {}));
    void a.request("wait", {}, { id: "same" }).catch(() => {});
    await expect(a.request("wait", {}, { id: "same" })).rejects.toMatchObject({
      code: RpcErrorCode.InvalidRequest,
    });
  });

  it("survives any text from the peer", async () => {
    const { b } = pair();
    for (const text of ["", "{", "null", "[]", '{"jsonrpc":"2.0"}', "\u0000", `${"[".repeat(100_000)}`]) {
      expect(() => b.receive(text)).not.toThrow();
    }
  });
});
