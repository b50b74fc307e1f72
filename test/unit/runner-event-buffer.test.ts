/** The runner's outbox of agent events: numbered, kept until stored, bounded without losing status. */
import { describe, expect, it } from "vitest";
import { logEvent, outputEvent } from "../../container-client/src/runner/agent-process.js";
import { EventBuffer } from "../../container-client/src/runner/event-buffer.js";
import { Limits } from "../../protocol/limits.js";

describe("EventBuffer", () => {
  it("numbers events from 1 and keeps them until acknowledged", () => {
    const buffer = new EventBuffer();
    const [a] = buffer.push({ type: "droid_log", text: "a" });
    const [b] = buffer.push({ type: "droid_log", text: "b" });
    expect([a?.seq, b?.seq]).toEqual([1, 2]);
    expect(buffer.pending().map((e) => e.seq)).toEqual([1, 2]);
    buffer.ack(1);
    expect(buffer.pending().map((e) => e.seq)).toEqual([2]);
    buffer.ack(1);
    expect(buffer.acked).toBe(1);
    buffer.ack(5);
    expect(buffer.size).toBe(0);
  });

  it("drops the oldest output past its bound, never a status event, and says how much it dropped", () => {
    const buffer = new EventBuffer({ maxEvents: 3 });
    buffer.push({ type: "droid_status", status: "running" });
    for (let i = 0; i < 5; i++) buffer.push({ type: "droid_output", text: `line ${i}` });
    const kept = buffer.pending();
    expect(kept).toHaveLength(3);
    expect(kept[0]).toMatchObject({ type: "droid_status" });
    const next = buffer.push({ type: "droid_output", text: "after" });
    expect(next[0]).toMatchObject({
      type: "droid_log",
      text: expect.stringMatching(/\d+ output events were dropped/),
    });
    expect(next[1]).toMatchObject({ text: "after" });
    // Seqs keep rising across drops (gaps are fine; the session object keeps the highest).
    expect(next[1]?.seq).toBeGreaterThan(next[0]?.seq ?? 0);
  });
});

describe("agent output lines", () => {
  it("turns a JSON line into data and anything else into text", () => {
    expect(outputEvent('{"op":"ready"}')).toEqual({ type: "droid_output", data: { op: "ready" } });
    expect(outputEvent("plain")).toEqual({ type: "droid_output", text: "plain" });
  });

  it("reports a line over the output budget instead of relaying it (escapes counted)", () => {
    const escaped = "\u0001".repeat(Limits.outputEventBytes / 4);
    expect(outputEvent(escaped)).toMatchObject({
      type: "droid_log",
      text: expect.stringContaining("dropped"),
    });
    expect(outputEvent({ oversized: 999_999 })).toMatchObject({
      type: "droid_log",
      text: expect.stringContaining("999999"),
    });
    expect(logEvent("x".repeat(10_000))).toMatchObject({ text: expect.stringMatching(/…$/) });
  });
});
