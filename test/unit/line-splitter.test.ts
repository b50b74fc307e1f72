import { describe, expect, it } from "vitest";
import { type LineEvent, LineSplitter } from "../../protocol/line-splitter.js";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);
const texts = (events: LineEvent[]) =>
  events.map((e) => (e.kind === "line" ? e.text : `<oversized ${e.bytes}>`));

describe("LineSplitter", () => {
  it("joins a line that arrives across chunk boundaries", () => {
    const s = new LineSplitter(1024);
    expect(s.push(bytes('{"a":'))).toEqual([]);
    expect(s.push(bytes("1}"))).toEqual([]);
    expect(texts(s.push(bytes('\n{"b":2}\n{"c"')))).toEqual(['{"a":1}', '{"b":2}']);
    expect(texts(s.push(bytes(":3}\n")))).toEqual(['{"c":3}']);
  });

  it("strips CRLF line endings and skips empty lines", () => {
    const s = new LineSplitter(1024);
    expect(texts(s.push(bytes("one\r\n\r\ntwo\r")))).toEqual(["one"]);
    expect(texts(s.push(bytes("\n")))).toEqual(["two"]);
  });

  it("decodes multibyte UTF-8 split across chunks", () => {
    const s = new LineSplitter(1024);
    const all = bytes("héllo 🌍 wörld\n");
    const out: LineEvent[] = [];
    // One byte per chunk splits every multibyte sequence.
    for (let i = 0; i < all.length; i++) out.push(...s.push(all.subarray(i, i + 1)));
    expect(texts(out)).toEqual(["héllo 🌍 wörld"]);
  });

  it("reports an oversized line once and still parses the next line", () => {
    const s = new LineSplitter(16);
    const out: LineEvent[] = [];
    out.push(...s.push(bytes("x".repeat(10))));
    out.push(...s.push(bytes("y".repeat(10))));
    out.push(...s.push(bytes("z".repeat(30))));
    out.push(...s.push(bytes("\nok\n")));
    expect(out).toEqual([
      { kind: "oversized", bytes: 50 },
      { kind: "line", text: "ok" },
    ]);
  });

  it("accepts a line exactly at the cap", () => {
    const s = new LineSplitter(4);
    expect(texts(s.push(bytes("abcd\nabcde\nab\n")))).toEqual(["abcd", "<oversized 5>", "ab"]);
  });

  it("flushes a trailing line without newline on end()", () => {
    const s = new LineSplitter(1024);
    expect(texts(s.push(bytes("first\nlast")))).toEqual(["first"]);
    expect(texts(s.end())).toEqual(["last"]);
    expect(s.end()).toEqual([]);
  });

  it("reports a trailing oversized line on end()", () => {
    const s = new LineSplitter(3);
    expect(s.push(bytes("toolong"))).toEqual([]);
    expect(s.end()).toEqual([{ kind: "oversized", bytes: 7 }]);
  });
});
