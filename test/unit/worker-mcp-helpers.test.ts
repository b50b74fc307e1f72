import { describe, expect, it } from "vitest";
import { passesLevel } from "../../worker/src/mcp/mcp-meta.js";
import {
  isSupportedVersion,
  negotiateVersion,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "../../worker/src/mcp/protocol-version.js";
import { answerOutcome, failure, seconds } from "../../worker/src/session/outcomes.js";

describe("MCP protocol versions", () => {
  it("speaks 2025-11-25 first, then 2025-06-18 and 2025-03-26", () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(["2025-11-25", "2025-06-18", "2025-03-26"]);
  });

  it.each(SUPPORTED_PROTOCOL_VERSIONS)("echoes %s", (v) => {
    expect(negotiateVersion(v)).toBe(v);
    expect(isSupportedVersion(v)).toBe(true);
  });

  it.each(["2024-11-05", "", "latest"])("answers %j with the newest", (v) => {
    expect(negotiateVersion(v)).toBe("2025-11-25");
    expect(isSupportedVersion(v)).toBe(false);
  });
});

describe("passesLevel", () => {
  it("passes levels at or above the threshold", () => {
    expect(passesLevel("error", "error")).toBe(true);
    expect(passesLevel("critical", "error")).toBe(true);
    expect(passesLevel("info", "error")).toBe(false);
    expect(passesLevel("debug", "debug")).toBe(true);
    expect(passesLevel("notice", "warning")).toBe(false);
  });
});

describe("caller tool outcomes", () => {
  it("relays a result", () => {
    expect(answerOutcome({ status: "sent" }, undefined)).toEqual({ ok: true, result: { status: "sent" } });
    expect(answerOutcome({ status: "sent" }, null)).toEqual({ ok: true, result: { status: "sent" } });
  });

  it.each([
    ["a string", "printer on fire", "printer on fire"],
    ["an object with a message", { message: "nope", code: 3 }, "nope"],
    ["any other value, as JSON", { code: 3 }, '{"code":3}'],
  ])("turns %s error into caller_error", (_, error, message) => {
    expect(answerOutcome(null, error)).toEqual({ ok: false, error: { reason: "caller_error", message } });
  });

  it("refuses an answer with both result and error, or with neither", () => {
    expect(() => answerOutcome("r", "e")).toThrow(expect.objectContaining({ code: "invalid_arguments" }));
    expect(() => answerOutcome(undefined, undefined)).toThrow(
      expect.objectContaining({ code: "invalid_arguments" }),
    );
    expect(() => answerOutcome(null, null)).toThrow(/give result/);
  });

  it("refuses an answer over the result budget, naming the limit", () => {
    expect(() => answerOutcome("x".repeat(600_000), undefined)).toThrow(
      expect.objectContaining({ code: "too_large", message: expect.stringContaining("524288") }),
    );
  });

  it("builds failures and human durations", () => {
    expect(failure("timeout", "late")).toEqual({ ok: false, error: { reason: "timeout", message: "late" } });
    expect(seconds(60_000)).toBe("60 s");
    expect(seconds(1_500)).toBe("1.5 s");
  });
});
