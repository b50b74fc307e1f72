/** The Claude Code adapter against a recorded stream-json session (two turns, an interrupt, a third turn). */
import { describe, expect, it } from "vitest";
import { claudeDriver } from "../../container-client/src/agents/claude.js";
import {
  loadStream,
  ofType,
  replayOnCue as replay,
  type SentKind,
  launchContext as testContext,
} from "../support/agent-streams.js";

function kindOf(sent: string): SentKind {
  const o = JSON.parse(sent) as { type: string; message?: { content: string } };
  if (o.type === "user") return { kind: "message", text: o.message?.content ?? "" };
  if (o.type === "control_request") return { kind: "interrupt" };
  return { kind: "handshake" };
}

describe("Claude Code adapter", () => {
  const sample = loadStream("claude-code-multiturn-interrupt.events.jsonl");

  it("maps a recorded session to common events: deltas, messages, the MCP tool call and its result, one completion per turn", () => {
    const { events } = replay(claudeDriver(testContext()), sample, kindOf);
    expect(ofType(events, "completion")).toEqual([
      expect.objectContaining({ message_seq: 1, stop_reason: "end_turn" }),
      expect.objectContaining({ message_seq: 2, stop_reason: "interrupted" }),
      expect.objectContaining({ message_seq: 3, stop_reason: "end_turn" }),
    ]);
    expect(ofType(events, "tool_call")).toEqual([
      {
        type: "tool_call",
        call_id: "toolu_1795311591485",
        name: "mcp__echo__echo",
        input: { text: "ping from fake model" },
      },
    ]);
    expect(ofType(events, "tool_result")).toEqual([
      { type: "tool_result", call_id: "toolu_1795311591485", output: "echo: ping from fake model" },
    ]);
    const deltas = ofType(events, "delta")
      .map((e) => e.text)
      .join("");
    expect(deltas).toContain("TOOL RESULT WAS: echo: ping from fake model. Done.");
    expect(ofType(events, "message").map((e) => e.text)).toContain(
      "TOOL RESULT WAS: echo: ping from fake model. Done.",
    );
    expect(ofType(events, "system")[0]).toMatchObject({
      subtype: "init",
      data: { model: "claude-opus-5-5" },
    });
    // The turn order: each completion comes after that turn's last message.
    const order = events
      .filter((e) => e.type === "completion" || e.type === "tool_result")
      .map((e) => e.type);
    expect(order).toEqual(["tool_result", "completion", "completion", "completion"]);
  });

  it("writes user turns and the interrupt exactly as the CLI took them", () => {
    const { written } = replay(claudeDriver(testContext()), sample, kindOf);
    const recorded = written.filter((w) => w.recorded !== null);
    expect(recorded).toHaveLength(4);
    for (const { line, recorded: sent } of recorded) {
      const mine = JSON.parse(line) as Record<string, unknown>;
      const theirs = JSON.parse(sent ?? "") as Record<string, unknown>;
      // Request ids are ours to choose.
      if (theirs.type === "control_request") {
        expect(mine).toMatchObject({ type: "control_request", request: { subtype: "interrupt" } });
        expect(mine.request_id).toEqual(expect.any(String));
      } else expect(mine).toEqual(theirs);
    }
  });

  it("sends no interrupt when no turn is in flight", () => {
    expect(claudeDriver(testContext()).interrupt()).toEqual([]);
  });

  it("launches headless with the MCP config file, the forwarder and the placeholder key, never a real one", () => {
    const context = testContext();
    const launch = claudeDriver(context).launch();
    expect(launch.argv.slice(0, 2)).toEqual(["/opt/agents/claude/claude", "-p"]);
    expect(launch.argv).toEqual(
      expect.arrayContaining([
        "--input-format",
        "stream-json",
        "--strict-mcp-config",
        "--dangerously-skip-permissions",
      ]),
    );
    expect(launch.argv[launch.argv.indexOf("--model") + 1]).toBe("claude-sonnet-4-5");
    expect(launch.env).toMatchObject({
      ANTHROPIC_BASE_URL: "http://127.0.0.1:45678",
      ANTHROPIC_API_KEY: "oubm_placeholder_0123456789",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      ENABLE_TOOL_SEARCH: "false",
    });
    const configPath = launch.argv[launch.argv.indexOf("--mcp-config") + 1];
    const file = launch.files.find((f) => f.path === configPath);
    expect(file?.path.startsWith(context.home)).toBe(true);
    expect(JSON.parse(file?.content ?? "")).toEqual({
      mcpServers: {
        oubliette: {
          command: "/usr/bin/node",
          args: ["/opt/oubliette/container-client.mjs"],
          env: context.mcpServer.env,
        },
      },
    });
  });

  it("allows a tool permission request of an unattended session, and says so", () => {
    const driver = claudeDriver(testContext());
    const out = driver.read(
      JSON.stringify({
        type: "control_request",
        request_id: "perm-1",
        request: { subtype: "can_use_tool", tool_name: "Bash", input: { command: "ls" } },
      }),
    );
    expect(out.events).toEqual([expect.objectContaining({ type: "system", subtype: "permission_granted" })]);
    expect(JSON.parse(out.write[0] ?? "")).toEqual({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: "perm-1",
        response: { behavior: "allow", updatedInput: { command: "ls" } },
      },
    });
  });

  it("shows a line that is not JSON as output instead of failing", () => {
    expect(claudeDriver(testContext()).read("Warning: something").events).toEqual([
      { type: "droid_output", text: "Warning: something" },
    ]);
  });
});

describe("Claude Code adapter after a crash", () => {
  it("knows its session id from the init line, and a relaunch resumes it (--resume)", () => {
    const context = testContext({
      runtime: "claude",
      model: "claude-sonnet-4-5",
      command: ["/opt/agents/claude/claude"],
    });
    const driver = claudeDriver(context);
    expect(driver.conversationId?.()).toBeUndefined();
    driver.read(JSON.stringify({ type: "system", subtype: "init", session_id: "c0ffee", model: "m" }));
    expect(driver.conversationId?.()).toBe("c0ffee");
    const argv = claudeDriver({ ...context, resume: "c0ffee" }).launch().argv;
    expect(argv.slice(argv.indexOf("--resume"), argv.indexOf("--resume") + 2)).toEqual([
      "--resume",
      "c0ffee",
    ]);
    expect(driver.launch().argv).not.toContain("--resume");
  });
});
