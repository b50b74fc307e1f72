import { describe, expect, it } from "vitest";
import { exceedsUtf8Bytes } from "../../worker/src/frame-size.js";

describe("exceedsUtf8Bytes", () => {
  it("counts ASCII one byte per character", () => {
    expect(exceedsUtf8Bytes("a".repeat(10), 10)).toBe(false);
    expect(exceedsUtf8Bytes("a".repeat(11), 10)).toBe(true);
  });

  it("counts multibyte characters by their UTF-8 size", () => {
    expect(exceedsUtf8Bytes("é".repeat(5), 10)).toBe(false);
    expect(exceedsUtf8Bytes("é".repeat(6), 10)).toBe(true);
    expect(exceedsUtf8Bytes("€".repeat(4), 11)).toBe(true);
    expect(exceedsUtf8Bytes("€".repeat(4), 12)).toBe(false);
  });

  it("counts a surrogate pair as four bytes", () => {
    expect(exceedsUtf8Bytes("🌍".repeat(3), 12)).toBe(false);
    expect(exceedsUtf8Bytes("🌍".repeat(3), 11)).toBe(true);
  });

  it("decides short and long strings without encoding them", () => {
    expect(exceedsUtf8Bytes("", 0)).toBe(false);
    expect(exceedsUtf8Bytes("€€", 6)).toBe(false);
    expect(exceedsUtf8Bytes("x".repeat(2000), 1999)).toBe(true);
  });
});
