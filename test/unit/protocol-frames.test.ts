/** The one message family, the JSON guards and the size budget (protocol/). */
import { describe, expect, it } from "vitest";
import { batchEvents } from "../../protocol/agent-events.js";
import { exceedsUtf8Bytes, jsonDepthExceeds, parseJson, utf8Length } from "../../protocol/json.js";
import { checkSize, Limits, MAX_ENVELOPE_BYTES, SizedKinds } from "../../protocol/limits.js";
import { clip, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { parseFrame } from "../../protocol/rpc/messages.js";

const limits = { maxBytes: 1024, maxDepth: 8 };

describe("parseFrame", () => {
  it("reads requests, notifications, results and errors", () => {
    expect(parseFrame('{"jsonrpc":"2.0","id":1,"method":"ping"}', limits)).toMatchObject({
      kind: "request",
      id: 1,
      method: "ping",
    });
    expect(parseFrame('{"jsonrpc":"2.0","method":"n","params":{"a":1}}', limits)).toMatchObject({
      kind: "notification",
      params: { a: 1 },
    });
    expect(parseFrame('{"jsonrpc":"2.0","id":"x","result":null}', limits)).toMatchObject({
      kind: "result",
      id: "x",
    });
    expect(
      parseFrame('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}', limits),
    ).toMatchObject({
      kind: "error",
      id: null,
    });
  });

  it.each([
    ["not JSON", "{nope", RpcErrorCode.ParseError, null],
    ["a batch", '[{"jsonrpc":"2.0","id":1,"method":"a"}]', RpcErrorCode.InvalidRequest, null],
    ["an object id", '{"jsonrpc":"2.0","id":{"a":1},"method":"a"}', RpcErrorCode.InvalidRequest, null],
    ["a fractional id", '{"jsonrpc":"2.0","id":1.5,"method":"a"}', RpcErrorCode.InvalidRequest, null],
    ["a wrong version", '{"jsonrpc":"1.0","id":3,"method":"a"}', RpcErrorCode.InvalidRequest, 3],
    ["a scalar", "42", RpcErrorCode.InvalidRequest, null],
    [
      "too deep",
      `{"jsonrpc":"2.0","id":4,"method":"a","params":${"[".repeat(9)}${"]".repeat(9)}}`,
      RpcErrorCode.InvalidRequest,
      null,
    ],
    [
      "too large",
      `{"jsonrpc":"2.0","id":5,"method":"a","params":"${"x".repeat(2000)}"}`,
      RpcErrorCode.InvalidRequest,
      null,
    ],
  ])("refuses %s with the right code and id", (_, text, code, id) => {
    const frame = parseFrame(text, limits);
    expect(frame.kind).toBe("invalid");
    if (frame.kind !== "invalid") return;
    expect(frame.error.code).toBe(code);
    expect(frame.id).toBe(id);
  });

  it("never echoes more than a few dozen characters of a method name", () => {
    const frame = parseFrame(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "m".repeat(900) }), {
      ...limits,
      maxBytes: 4096,
    });
    expect(frame.kind === "invalid" && frame.error.message.length).toBeLessThan(200);
    expect(clip("x".repeat(3_000_000)).length).toBe(64);
    expect(clip("short")).toBe("short");
  });
});

describe("JSON guards", () => {
  it("measures depth without recursion, ignoring brackets inside strings", () => {
    expect(jsonDepthExceeds(`${"[".repeat(100_000)}${"]".repeat(100_000)}`, 64)).toBe(true);
    expect(jsonDepthExceeds(JSON.stringify({ a: ["[[[[[[[[[[[[[[[["] }), 3)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ a: '\\"[[[[' }), 2)).toBe(false);
    const deep = parseJson(`${'{"a":'.repeat(70)}1${"}".repeat(70)}`);
    expect(deep).toMatchObject({ ok: false, reason: "too_deep" });
  });

  it("counts UTF-8 bytes the way TextEncoder does", () => {
    for (const text of ["ascii", "é", "€", "😀", "\u0001", "a\ud800b", "\udc00"]) {
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).byteLength);
    }
    expect(exceedsUtf8Bytes("€€", 5)).toBe(true);
    expect(exceedsUtf8Bytes("€€", 6)).toBe(false);
  });
});

describe("the size budget", () => {
  it("lets a payload at its limit plus the largest envelope fit every frame and line", () => {
    for (const { limit } of Object.values(SizedKinds)) {
      expect(limit + MAX_ENVELOPE_BYTES).toBeLessThanOrEqual(Limits.frameBytes);
      expect(limit + MAX_ENVELOPE_BYTES).toBeLessThanOrEqual(Limits.lineBytes);
    }
  });

  it("counts encoded bytes: 200,000 control characters are 1.2 MB once escaped", () => {
    const prompt = "\u0001".repeat(200_000);
    const error = checkSize("message", prompt);
    expect(error?.code).toBe("too_large");
    expect(error?.bytes).toBe(1_200_002);
    expect(error?.message).toContain(String(Limits.messageBytes));
    expect(checkSize("message", "hello")).toBeNull();
  });

  it("batches events by count and by bytes, never splitting one", () => {
    const big = (seq: number) => ({ seq, type: "droid_log" as const, text: "x".repeat(200_000) });
    const batches = batchEvents([1, 2, 3, 4, 5, 6].map(big), 900_000);
    expect(batches.map((b) => b.length)).toEqual([4, 2]);
    const small = Array.from({ length: 600 }, (_, i) => ({
      seq: i + 1,
      type: "droid_log" as const,
      text: "",
    }));
    expect(batchEvents(small, 900_000).map((b) => b.length)).toEqual([256, 256, 88]);
  });
});
