import { describe, expect, it } from "vitest";
import { describeRequests, failureReport, offeredTools } from "../e2e/agent-failure-report.js";
import type { RecordedRequest } from "../fixtures/fake-model/types.js";

const request = (at: number, body: unknown, main = true): RecordedRequest => ({
  protocol: "anthropic",
  method: "POST",
  path: "/v1/messages",
  headers: {},
  body,
  main,
  at,
});

const TOOL = (name: string) => ({ name, description: name, input_schema: { type: "object" } });
const BODY = (tools: unknown[]) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 100,
  messages: [{ role: "user", content: "hi" }],
  tools,
});

describe("an agents test's failure report", () => {
  it("names the tools a request offered, as the fake model read them", () => {
    expect(offeredTools(request(0, BODY([TOOL("Bash"), TOOL("mcp__oubliette__ant_lookup")])))).toEqual([
      "Bash",
      "mcp__oubliette__ant_lookup",
    ]);
    expect(offeredTools({ ...request(0, null), protocol: null })).toEqual([]);
    expect(offeredTools(request(0, { not: "a request" }))[0]).toMatch(/^\(unreadable: /);
  });

  it("times requests from the first and says which offered tools", () => {
    const lines = describeRequests([request(1_000, BODY([TOOL("Bash")])), request(3_500, BODY([]), false)]);
    expect(lines).toEqual([
      "  +0.0 s POST /v1/messages main=true tools=[Bash]",
      "  +2.5 s POST /v1/messages main=false tools=[]",
    ]);
  });

  it("puts the requests and the session's events under one label", () => {
    const report = failureReport(
      "codex, a test",
      [request(0, BODY([]))],
      [{ type: "agent_started", session_id: "s1" } as never],
    );
    expect(report).toContain("codex, a test: what the fake model was asked (1)");
    expect(report).toContain("codex, a test: the session's events (1)");
    expect(report).toContain('agent_started {"type":"agent_started","session_id":"s1"}');
  });
});
