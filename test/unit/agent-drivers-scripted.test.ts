/**
 * The scripted droid's adapter: its line protocol's permission questions become PermissionAsks
 * (never output), each answered with the approval_answer line under the droid's own id; a
 * malformed question is relayed as output, as any other line.
 */
import { describe, expect, it } from "vitest";
import { readScriptedLine, scriptedDriver } from "../../container-client/src/agents/scripted.js";
import { ApprovalAnswerLineSchema } from "../../protocol/agent-events.js";
import { launchContext } from "../support/agent-streams.js";

const shell = {
  kind: "shell",
  command: "rm -rf build",
  cwd: "/workspace/default",
  summary: "clean the build",
};

describe("scripted adapter: approvals", () => {
  it("turns an approval_request line into one PermissionAsk with its request, and no event", () => {
    const read = readScriptedLine(JSON.stringify({ type: "approval_request", id: "ask_1", request: shell }));
    expect(read.events).toEqual([]);
    expect(read.write).toEqual([]);
    expect(read.asks).toHaveLength(1);
    expect(read.asks?.[0]?.request).toEqual(shell);
  });

  it("answers an ask with the approval_answer line under the same id, carrying the whole decision", () => {
    const read = readScriptedLine(JSON.stringify({ type: "approval_request", id: "ask_7", request: shell }));
    const ask = read.asks?.[0];
    if (!ask) throw new Error("no ask");
    const allow = ask.answer({ decision: "allow", scope: "session", by: "answer" });
    expect(allow).toHaveLength(1);
    expect(JSON.parse(allow[0] ?? "")).toEqual({
      type: "approval_answer",
      id: "ask_7",
      decision: "allow",
      scope: "session",
      by: "answer",
    });
    const deny = ask.answer({ decision: "deny", scope: "once", by: "policy", message: "not here" });
    const line = ApprovalAnswerLineSchema.parse(JSON.parse(deny[0] ?? ""));
    expect(line).toEqual({
      type: "approval_answer",
      id: "ask_7",
      decision: "deny",
      scope: "once",
      by: "policy",
      message: "not here",
    });
  });

  it("relays a malformed approval_request as droid_output, never as an ask", () => {
    const malformed = [
      // a shell request without its command
      { type: "approval_request", id: "ask_2", request: { kind: "shell", summary: "x" } },
      // an unknown kind
      { type: "approval_request", id: "ask_3", request: { kind: "teleport", summary: "x" } },
      // no id
      { type: "approval_request", request: shell },
      // an id the protocol does not allow
      { type: "approval_request", id: "has spaces", request: shell },
    ];
    for (const value of malformed) {
      const read = readScriptedLine(JSON.stringify(value));
      expect(read.asks ?? []).toEqual([]);
      expect(read.events).toEqual([{ type: "droid_output", data: value }]);
    }
  });

  it("keeps its other lines as they were: completions, output, raw text", () => {
    expect(readScriptedLine('{"type":"turn_completed","message_seq":2}')).toEqual({
      events: [{ type: "completion", message_seq: 2, stop_reason: "end_turn" }],
      write: [],
    });
    expect(readScriptedLine('{"op":"print","data":1}').asks).toBeUndefined();
    expect(readScriptedLine("not json").events).toEqual([{ type: "droid_output", text: "not json" }]);
  });

  it("reads through the driver made for an agent process alike", () => {
    const driver = scriptedDriver(launchContext({ runtime: "scripted", command: ["droid"] }));
    const read = driver.read(JSON.stringify({ type: "approval_request", id: "a.b:c-d_e", request: shell }));
    expect(read.asks?.map((a) => a.request.kind)).toEqual(["shell"]);
  });
});
