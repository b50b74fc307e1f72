/** The runner's outbox of agent events: numbered, kept until stored, bounded without losing status. */
import { describe, expect, it } from "vitest";
import { readScriptedLine } from "../../container-client/src/agents/scripted.js";
import { logEvent } from "../../container-client/src/runner/agent-process.js";
import { EventBuffer } from "../../container-client/src/runner/event-buffer.js";
import { fitEvent } from "../../container-client/src/runner/fit-event.js";
import { jsonBytes } from "../../protocol/json.js";
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
  it("the scripted adapter turns a JSON line into data, anything else into text, and its turn line into a completion", () => {
    expect(readScriptedLine('{"op":"ready"}').events).toEqual([
      { type: "droid_output", data: { op: "ready" } },
    ]);
    expect(readScriptedLine("plain").events).toEqual([{ type: "droid_output", text: "plain" }]);
    expect(readScriptedLine('{"type":"turn_completed","message_seq":3}').events).toEqual([
      { type: "completion", message_seq: 3, stop_reason: "end_turn" },
    ]);
    expect(
      readScriptedLine('{"type":"turn_completed","message_seq":4,"stop_reason":"interrupted"}').events,
    ).toEqual([{ type: "completion", message_seq: 4, stop_reason: "interrupted" }]);
    // Not exactly the turn line: relayed as output, never taken for the end of a turn.
    expect(readScriptedLine('{"type":"turn_completed","message_seq":4,"x":1}').events[0]?.type).toBe(
      "droid_output",
    );
  });

  it("cuts a text over the output budget (escapes counted) instead of losing the event", () => {
    const escaped = "\u0001".repeat(Limits.outputEventBytes / 4);
    const fitted = fitEvent({ type: "droid_output", text: escaped });
    expect(fitted).toMatchObject({ type: "droid_output", text: expect.stringContaining("[cut:") });
    expect(jsonBytes(fitted)).toBeLessThanOrEqual(Limits.outputEventBytes);
    const result = fitEvent({
      type: "tool_result",
      call_id: "c1",
      output: "y".repeat(Limits.outputEventBytes),
    });
    expect(result).toMatchObject({
      type: "tool_result",
      call_id: "c1",
      output: expect.stringContaining("[cut:"),
    });
    expect(jsonBytes(result)).toBeLessThanOrEqual(Limits.outputEventBytes);
  });

  it("reports JSON output or a line over the budget instead of relaying it", () => {
    const huge = fitEvent({ type: "droid_output", data: { big: "z".repeat(Limits.outputEventBytes) } });
    expect(huge).toMatchObject({ type: "droid_log", text: expect.stringContaining("dropped") });
    expect(logEvent({ oversized: 999_999 })).toMatchObject({
      type: "droid_log",
      text: expect.stringContaining("999999"),
    });
    expect(logEvent("x".repeat(10_000))).toMatchObject({ text: expect.stringMatching(/…$/) });
  });
});
