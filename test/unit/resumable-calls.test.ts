/**
 * Resumable calls over an in-memory transport: sent under their id, re-sent on every reconnect,
 * settled once (answer, refusal, cancel, abort, backstop, the link ending), and cancellations
 * delivered now or right after the next reconnect.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import { type CallPeer, ResumableCalls } from "../../lib/rpc/resumable-calls.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { CANCELLED } from "../../protocol/rpc/messages.js";
import { defineRequest } from "../../protocol/rpc/method.js";

const logger = createLogger({ name: "resumable-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

interface Sent {
  method: string;
  params: unknown;
  id: unknown;
  answer(result: unknown): void;
  fail(error: unknown): void;
}

/** One connection's conversation: records what goes out; `drop` fails what is pending, as RpcPeer.close does. */
class FakePeer implements CallPeer {
  readonly requests: Sent[] = [];
  readonly notes: { method: string; params: unknown }[] = [];
  open = true;

  request(method: string, params: unknown, options: { id?: unknown } = {}): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.requests.push({ method, params, id: options.id, answer: resolve, fail: reject });
    });
  }

  notify(method: string, params: unknown): boolean {
    if (!this.open) return false;
    this.notes.push({ method, params });
    return true;
  }

  drop(): void {
    this.open = false;
    for (const r of this.requests)
      r.fail(new RpcError(RpcErrorCode.ConnectionClosed, "the connection closed"));
  }
}

/** A link whose current conversation the test sets; outcomes are strings. */
function link(maxQueuedCancels?: number) {
  const state: { peer: FakePeer | null } = { peer: null };
  const answered = vi.fn((result: unknown) => `answer:${String(result)}`);
  const calls = new ResumableCalls<string>({
    method: "work",
    peer: () => state.peer,
    answered,
    refused: (err) => `refused:${err instanceof Error ? err.message : String(err)}`,
    ...(maxQueuedCancels === undefined ? {} : { maxQueuedCancels }),
  });
  const connect = () => {
    const peer = new FakePeer();
    state.peer = peer;
    calls.resend(peer);
    return peer;
  };
  const disconnect = () => {
    state.peer?.drop();
    state.peer = null;
  };
  return { calls, answered, connect, disconnect };
}

/** A peer whose messages reach `other()` asynchronously, like a real transport. */
function peerSendingTo(other: () => RpcPeer): RpcPeer {
  return new RpcPeer({
    send: (text) => {
      setImmediate(() => other().receive(text));
      return true;
    },
    maxMessageBytes: 64 * 1024,
    logger,
  });
}

const work = defineRequest("work", {
  params: z.object({ n: z.number() }),
  result: z.object({ doubled: z.number() }),
});

const cancelled = (reason: string) => ({ outcome: `cancelled:${reason}`, reason });

afterEach(() => {
  vi.useRealTimers();
});

describe("ResumableCalls", () => {
  it("sends a call under its id and re-sends it under the same id after a reconnect", async () => {
    const { calls, connect, disconnect } = link();
    const first = connect();
    const done = calls.call("c1", { x: 1 });
    expect(first.requests).toMatchObject([{ method: "work", params: { x: 1 }, id: "c1" }]);
    disconnect();
    await Promise.resolve();
    expect(calls.size).toBe(1);
    const second = connect();
    expect(second.requests).toMatchObject([{ method: "work", params: { x: 1 }, id: "c1" }]);
    second.requests[0]?.answer("ok");
    await expect(done).resolves.toBe("answer:ok");
    expect(calls.size).toBe(0);
  });

  it("holds a call made while disconnected until the link is up", async () => {
    const { calls, connect } = link();
    const done = calls.call("c1", "p");
    const peer = connect();
    expect(peer.requests.map((r) => r.id)).toEqual(["c1"]);
    peer.requests[0]?.answer(7);
    await expect(done).resolves.toBe("answer:7");
  });

  it("settles once when an answer arrives twice", async () => {
    const { calls, answered, connect } = link();
    const old = connect();
    const done = calls.call("c1", {});
    // The old conversation never heard its close; the call went out again on a new one.
    const fresh = connect();
    fresh.requests[0]?.answer("first");
    old.requests[0]?.answer("second");
    await expect(done).resolves.toBe("answer:first");
    await new Promise((r) => setImmediate(r));
    expect(answered).toHaveBeenCalledTimes(1);
  });

  it("is one call per id while unsettled, and does not send it twice on one conversation", async () => {
    const { calls, connect } = link();
    const peer = connect();
    const a = calls.call("c1", { n: 1 });
    const b = calls.call("c1", { n: 2 });
    expect(b).toBe(a);
    calls.resend(peer);
    expect(peer.requests).toHaveLength(1);
    peer.requests[0]?.answer("x");
    await expect(a).resolves.toBe("answer:x");
  });

  it("settles with the refusal, but never with a closed connection", async () => {
    const { calls, connect, disconnect } = link();
    const first = connect();
    const done = calls.call("c1", {});
    disconnect();
    await Promise.resolve();
    const second = connect();
    second.requests[0]?.fail(new RpcError(RpcErrorCode.ServerError, "no such tool"));
    await expect(done).resolves.toBe("refused:no such tool");
    expect(first.requests).toHaveLength(1);
  });

  it("queues a cancellation while disconnected and sends it on connect, before the calls", async () => {
    const { calls, connect } = link();
    const done = calls.call("c1", {});
    calls.call("c2", {});
    calls.cancel("c1", cancelled("gave up"));
    await expect(done).resolves.toBe("cancelled:gave up");
    const peer = connect();
    expect(peer.notes).toEqual([{ method: CANCELLED, params: { requestId: "c1", reason: "gave up" } }]);
    expect(peer.requests.map((r) => r.id)).toEqual(["c2"]);
    const again = connect();
    expect(again.notes).toEqual([]);
  });

  it("sends a cancellation at once when connected, also for a call it no longer knows", async () => {
    const { calls, connect } = link();
    const peer = connect();
    const done = calls.call("c1", {});
    calls.cancel("c1", cancelled("droid cancelled"));
    calls.cancel("gone", cancelled("late"));
    await expect(done).resolves.toBe("cancelled:droid cancelled");
    expect(peer.notes.map((n) => n.params)).toEqual([
      { requestId: "c1", reason: "droid cancelled" },
      { requestId: "gone", reason: "late" },
    ]);
    // A late answer changes nothing.
    peer.requests[0]?.answer("late");
    await expect(done).resolves.toBe("cancelled:droid cancelled");
  });

  it("drops a queued cancellation when the id is called again, and the oldest past the bound", () => {
    const { calls, connect } = link(2);
    calls.cancel("a", cancelled("1"));
    calls.cancel("b", cancelled("2"));
    calls.cancel("c", cancelled("3"));
    calls.cancel("d", cancelled("4"));
    void calls.call("d", {});
    const peer = connect();
    expect(peer.notes.map((n) => n.params)).toEqual([{ requestId: "c", reason: "3" }]);
    expect(peer.requests.map((r) => r.id)).toEqual(["d"]);
  });

  it("cancels on its abort signal, and settles at once without sending for one already aborted", async () => {
    const { calls, connect } = link();
    const peer = connect();
    const controller = new AbortController();
    const abort = { signal: controller.signal, cancel: () => cancelled("aborted") };
    const done = calls.call("c1", {}, { abort });
    controller.abort();
    await expect(done).resolves.toBe("cancelled:aborted");
    expect(peer.notes.map((n) => n.params)).toEqual([{ requestId: "c1", reason: "aborted" }]);
    await expect(calls.call("c2", {}, { abort })).resolves.toBe("cancelled:aborted");
    expect(peer.requests.map((r) => r.id)).toEqual(["c1"]);
    expect(peer.notes).toHaveLength(1);
  });

  it("cancels at the backstop, across reconnects, and not after an answer", async () => {
    vi.useFakeTimers();
    const { calls, connect, disconnect } = link();
    connect();
    const backstop = { ms: 1_000, cancel: () => cancelled("backstop") };
    const late = calls.call("late", {}, { backstop });
    const quick = calls.call("quick", {}, { backstop });
    disconnect();
    await vi.advanceTimersByTimeAsync(500);
    const peer = connect();
    peer.requests.find((r) => r.id === "quick")?.answer("fast");
    await expect(quick).resolves.toBe("answer:fast");
    await vi.advanceTimersByTimeAsync(500);
    await expect(late).resolves.toBe("cancelled:backstop");
    expect(peer.notes.map((n) => n.params)).toEqual([{ requestId: "late", reason: "backstop" }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("settles every call when the link ends; with a reason it tells a connected peer, and never later", async () => {
    const { calls, connect, disconnect } = link();
    const peer = connect();
    const a = calls.call("a", {});
    const b = calls.call("b", {});
    calls.settleAll((id) => `closed:${id}`, "shutting down");
    await expect(a).resolves.toBe("closed:a");
    await expect(b).resolves.toBe("closed:b");
    expect(peer.notes.map((n) => n.params)).toEqual([
      { requestId: "a", reason: "shutting down" },
      { requestId: "b", reason: "shutting down" },
    ]);
    disconnect();
    const c = calls.call("c", {});
    calls.settleAll(() => "rejected", "shutting down");
    await expect(c).resolves.toBe("rejected");
    expect(connect().notes).toEqual([]);
    expect(calls.size).toBe(0);
  });

  it("works over real RpcPeers: the request id is the call id, and a re-sent call is answered", async () => {
    const served: unknown[] = [];
    let current: RpcPeer | null = null;
    const calls = new ResumableCalls<unknown>({
      method: "work",
      peer: () => current,
      answered: (result) => result,
      refused: (err) => err,
    });
    /** A fresh linked pair; the server answers only on the second connection. */
    const connect = (answer: boolean) => {
      let client!: RpcPeer;
      const server = peerSendingTo(() => client);
      client = peerSendingTo(() => server);
      server.handle(work, (params, ctx) => {
        served.push(ctx.id);
        return answer ? { doubled: params.n * 2 } : new Promise(() => {});
      });
      current = client;
      calls.resend(client);
      return client;
    };
    const first = connect(false);
    const done = calls.call("call-1", { n: 21 });
    await vi.waitFor(() => expect(served).toEqual(["call-1"]));
    first.close();
    current = null;
    connect(true);
    await expect(done).resolves.toEqual({ doubled: 42 });
    expect(served).toEqual(["call-1", "call-1"]);
  });
});
