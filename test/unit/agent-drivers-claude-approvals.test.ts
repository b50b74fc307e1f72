/**
 * The Claude Code adapter when the session asks: the launch (`--permission-prompt-tool stdio`),
 * each `can_use_tool` question (docs/approval-hooks.md §1) as a PermissionAsk, and the exact
 * `control_response` lines that answer it; `auto` stays as it was.
 */
import { describe, expect, it } from "vitest";
import { claudeDriver } from "../../container-client/src/agents/claude.js";
import type { AgentDriver, DriverOutput, PermissionAsk } from "../../container-client/src/agents/driver.js";
import {
  type ApprovalDecision,
  ApprovalRequestSchema,
  DEFAULT_DENIAL_MESSAGE,
} from "../../protocol/approvals.js";
import {
  loadStream,
  replayOnCue as replay,
  type SentKind,
  launchContext as testContext,
} from "../support/agent-streams.js";

const ASK = { approvals: "ask" as const };
const allow: ApprovalDecision = { decision: "allow", scope: "once", by: "answer" };
const allowSession: ApprovalDecision = { decision: "allow", scope: "session", by: "answer" };
const deny = (message?: string): ApprovalDecision => ({
  decision: "deny",
  scope: "once",
  by: "answer",
  ...(message !== undefined ? { message } : {}),
});

/** The Bash question of docs/approval-hooks.md, as Claude Code 2.1.330 prints it. */
const BASH_INPUT = { command: "npm test", description: "Run the test suite" };
const bashQuestion = JSON.stringify({
  type: "control_request",
  request_id: "8f1c2d3e-0000-4000-8000-000000000001",
  request: {
    subtype: "can_use_tool",
    tool_name: "Bash",
    input: BASH_INPUT,
    tool_use_id: "toolu_01ABC",
    permission_suggestions: [
      {
        type: "addRules",
        rules: [{ toolName: "Bash", ruleContent: "npm test" }],
        behavior: "allow",
        destination: "localSettings",
      },
    ],
    blocked_path: null,
    decision_reason: "…",
    decision_reason_type: "rule",
    title: "Claude wants to run npm test",
    display_name: "Bash",
    description: "Run the test suite",
    agent_id: null,
    suppress_always_allow_rule: false,
  },
});

function question(
  id: string,
  tool_name: string,
  input: unknown,
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    type: "control_request",
    request_id: id,
    request: { subtype: "can_use_tool", tool_name, input, tool_use_id: `toolu_${id}`, ...extra },
  });
}

/** The one ask a line makes (and nothing written or said besides). */
function onlyAsk(out: DriverOutput): PermissionAsk {
  expect(out.write).toEqual([]);
  expect(out.events).toEqual([]);
  expect(out.asks).toHaveLength(1);
  const ask = out.asks?.[0] as PermissionAsk;
  expect(ApprovalRequestSchema.safeParse(ask.request).success, "a valid ApprovalRequest").toBe(true);
  return ask;
}

function askOf(line: string, driver: AgentDriver = claudeDriver(testContext(ASK))): PermissionAsk {
  return onlyAsk(driver.read(line));
}

function response(line: string | undefined): unknown {
  return JSON.parse(line ?? "null");
}

describe("Claude Code adapter, approvals ask: the launch", () => {
  it("runs in the default permission mode, asking over stdio, with our own server's tools allowed", () => {
    const argv = claudeDriver(testContext(ASK)).launch().argv;
    expect(argv).not.toContain("--dangerously-skip-permissions");
    const at = argv.indexOf("--permission-mode");
    expect(argv.slice(at, at + 6)).toEqual([
      "--permission-mode",
      "default",
      "--permission-prompt-tool",
      "stdio",
      "--allowedTools",
      "mcp__oubliette",
    ]);
    // --allowedTools takes every argument up to the next option.
    expect(argv[at + 6]?.startsWith("--")).toBe(true);
  });

  it("differs from the auto launch in the permission and settings flags only", () => {
    const auto = claudeDriver(testContext()).launch();
    const ask = claudeDriver(testContext(ASK)).launch();
    const at = ask.argv.indexOf("--setting-sources=");
    const flags = ask.argv.slice(at, ask.argv.indexOf("--model"));
    expect(flags[0]).toBe("--setting-sources=");
    expect([...ask.argv.slice(0, at), ...ask.argv.slice(at + flags.length)]).toEqual(
      auto.argv.filter((a) => a !== "--dangerously-skip-permissions"),
    );
    const { CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD: claudeMd, ...env } = ask.env;
    expect(claudeMd).toBe("1");
    expect(env).toEqual(auto.env);
    expect(ask.files).toEqual(auto.files);
  });

  it("allows the tools of the MCP server the context names", () => {
    const context = testContext({ ...ASK, mcpServer: { ...testContext().mcpServer, name: "ours" } });
    expect(claudeDriver(context).launch().argv).toContain("mcp__ours");
  });
});

describe("Claude Code adapter, approvals auto: unchanged", () => {
  for (const approvals of [undefined, "auto" as const]) {
    it(`skips permissions and allows a question at once (approvals ${approvals ?? "absent"})`, () => {
      const driver = claudeDriver(testContext({ approvals }));
      const argv = driver.launch().argv;
      expect(argv).toContain("--dangerously-skip-permissions");
      expect(argv).not.toContain("--permission-prompt-tool");
      expect(argv).not.toContain("--allowedTools");
      const out = driver.read(bashQuestion);
      expect(out.asks).toBeUndefined();
      expect(out.events).toEqual([
        { type: "system", subtype: "permission_granted", message: "allowed Bash" },
      ]);
      expect(out.write.map(response)).toEqual([
        {
          type: "control_response",
          response: {
            subtype: "success",
            request_id: "8f1c2d3e-0000-4000-8000-000000000001",
            response: { behavior: "allow", updatedInput: BASH_INPUT },
          },
        },
      ]);
    });
  }
});

describe("Claude Code adapter, approvals ask: questions and answers", () => {
  it("asks about a shell command: the command, the workspace, the model's description", () => {
    const ask = askOf(bashQuestion);
    expect(ask.request).toEqual({
      kind: "shell",
      command: "npm test",
      cwd: "/workspace/default",
      summary: "Run the test suite",
    });
  });

  it("answers allow once with the input as given, whatever the scope (never the CLI's own 'always')", () => {
    const ask = askOf(bashQuestion);
    const expected =
      '{"type":"control_response","response":{"subtype":"success","request_id":"8f1c2d3e-0000-4000-8000-000000000001",' +
      '"response":{"behavior":"allow","updatedInput":{"command":"npm test","description":"Run the test suite"}}}}';
    expect(ask.answer(allow)).toEqual([expected]);
    expect(askOf(bashQuestion).answer(allowSession)).toEqual([expected]);
  });

  it("answers deny with the person's message, which the model reads", () => {
    const ask = askOf(bashQuestion);
    expect(ask.answer(deny("Not on this branch; use the unit tests."))).toEqual([
      '{"type":"control_response","response":{"subtype":"success","request_id":"8f1c2d3e-0000-4000-8000-000000000001",' +
        '"response":{"behavior":"deny","message":"Not on this branch; use the unit tests."}}}',
    ]);
  });

  it("answers a deny without a message with the default one (the CLI needs a message)", () => {
    for (const decision of [deny(), deny(""), { ...deny(), by: "timeout" as const }]) {
      expect(askOf(bashQuestion).answer(decision).map(response)).toEqual([
        {
          type: "control_response",
          response: {
            subtype: "success",
            request_id: "8f1c2d3e-0000-4000-8000-000000000001",
            response: { behavior: "deny", message: DEFAULT_DENIAL_MESSAGE },
          },
        },
      ]);
    }
  });

  it("never sends toolUseID (an answer that outlives its question is then dropped, not run)", () => {
    const ask = askOf(bashQuestion);
    expect(ask.answer(allow)[0]).not.toContain("toolUseID");
  });

  it("summarises a command without a description as 'Run: <command>'", () => {
    const ask = askOf(question("q1", "Bash", { command: "rm -rf build\nls" }));
    expect(ask.request).toMatchObject({
      kind: "shell",
      command: "rm -rf build\nls",
      summary: "Run: rm -rf build ls",
    });
  });

  it("asks about an edit: the file's path and the change old → new", () => {
    const input = {
      file_path: "/workspace/default/src/a.ts",
      old_string: "const a = 1;\nconst b = 2;",
      new_string: "const a = 3;",
    };
    const ask = askOf(question("q2", "Edit", input));
    expect(ask.request).toEqual({
      kind: "edit",
      path: "/workspace/default/src/a.ts",
      diff: [
        "--- /workspace/default/src/a.ts",
        "+++ /workspace/default/src/a.ts",
        "-const a = 1;",
        "-const b = 2;",
        "+const a = 3;",
      ].join("\n"),
      cwd: "/workspace/default",
      summary: "Edit /workspace/default/src/a.ts",
    });
    expect(response(ask.answer(allow)[0])).toMatchObject({
      response: { request_id: "q2", response: { behavior: "allow", updatedInput: input } },
    });
  });

  it("asks about a new file with its whole content, and a notebook cell with its source", () => {
    const write = askOf(
      question("q3", "Write", { file_path: "/workspace/default/NEW.md", content: "# New\n" }),
    );
    expect(write.request).toMatchObject({
      kind: "edit",
      path: "/workspace/default/NEW.md",
      diff: "# New\n",
      summary: "Write /workspace/default/NEW.md",
    });
    const notebook = askOf(
      question("q4", "NotebookEdit", {
        notebook_path: "/workspace/default/n.ipynb",
        new_source: "print(1)",
        edit_mode: "insert",
      }),
    );
    expect(notebook.request).toMatchObject({
      kind: "edit",
      path: "/workspace/default/n.ipynb",
      diff: "print(1)",
      summary: "Insert a cell into /workspace/default/n.ipynb",
    });
  });

  it("asks about a read outside the workspace, and a fetch as a read of its URL", () => {
    const read = askOf(question("q5", "Read", { file_path: "/etc/passwd" }, { blocked_path: "/etc/passwd" }));
    expect(read.request).toEqual({
      kind: "read",
      path: "/etc/passwd",
      cwd: "/workspace/default",
      summary: "Read /etc/passwd",
    });
    const fetch = askOf(question("q6", "WebFetch", { url: "https://example.com/x", prompt: "summarise" }));
    expect(fetch.request).toMatchObject({
      kind: "read",
      path: "https://example.com/x",
      summary: "Fetch https://example.com/x",
    });
    const grep = askOf(
      question("q7", "Grep", { pattern: "secret", path: "/home" }, { blocked_path: "/home" }),
    );
    expect(grep.request).toMatchObject({ kind: "read", path: "/home" });
  });

  it("asks about another MCP server's tool under the name the model sees, with its arguments", () => {
    const ask = askOf(
      question(
        "q8",
        "mcp__echo__echo",
        { text: "ping", n: 2 },
        { mcp_server: { name: "echo", source: "dynamic" } },
      ),
    );
    expect(ask.request).toEqual({
      kind: "mcp_tool",
      tool: "mcp__echo__echo",
      arguments: { text: "ping", n: 2 },
      cwd: "/workspace/default",
      summary: "Call mcp__echo__echo",
    });
  });

  it("allows a question about our own server's tool at once, unasked (the session gates those)", () => {
    const input = { name: "notes", content: "x" };
    const out = claudeDriver(testContext(ASK)).read(
      question("q9", "mcp__oubliette__spool_write", input, { mcp_server: { name: "oubliette" } }),
    );
    expect(out.asks ?? []).toEqual([]);
    expect(out.events).toEqual([
      expect.objectContaining({
        type: "system",
        subtype: "auto_answer",
        data: { method: "can_use_tool", granted: true },
      }),
    ]);
    expect(out.write).toEqual([
      '{"type":"control_response","response":{"subtype":"success","request_id":"q9",' +
        '"response":{"behavior":"allow","updatedInput":{"name":"notes","content":"x"}}}}',
    ]);
  });

  it("does not take a server whose name only starts like ours for ours", () => {
    const ask = askOf(question("q10", "mcp__oubliette_evil__x", {}));
    expect(ask.request).toMatchObject({ kind: "mcp_tool", tool: "mcp__oubliette_evil__x" });
  });

  it("still asks about a tool it does not know: the tool and its exact input, the CLI's words", () => {
    const ask = askOf(
      question("q11", "WebSearch", { query: "cve 2026" }, { title: "Claude wants to search the web" }),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: 'WebSearch {"query":"cve 2026"}',
      cwd: "/workspace/default",
      summary: "Claude wants to search the web",
    });
  });

  it("never throws on odd questions: each is still asked, and still answerable", () => {
    const odd = [
      question("o1", "Bash", { command: 42 }),
      question("o2", "Edit", { file_path: "/a" }),
      question("o3", "Bash", "not an object"),
      JSON.stringify({ type: "control_request", request_id: "o4", request: { subtype: "can_use_tool" } }),
      JSON.stringify({
        type: "control_request",
        request_id: "o5",
        request: { subtype: "can_use_tool", tool_name: 7, input: null, title: "Something odd" },
      }),
    ];
    for (const line of odd) {
      const ask = askOf(line);
      expect(ask.request.kind).toBe("shell");
      expect(ask.request.command).toEqual(expect.any(String));
      expect(response(ask.answer(allow)[0])).toMatchObject({
        type: "control_response",
        response: { subtype: "success", response: { behavior: "allow" } },
      });
    }
    expect(askOf(odd[4] as string).request.summary).toBe("Something odd");
  });

  it("says so when a question comes without an id (it cannot be answered)", () => {
    const out = claudeDriver(testContext(ASK)).read(
      JSON.stringify({
        type: "control_request",
        request: { subtype: "can_use_tool", tool_name: "Bash", input: {} },
      }),
    );
    expect(out.asks).toBeUndefined();
    expect(out.write).toEqual([]);
    expect(out.events).toEqual([{ type: "error", message: expect.stringContaining("cannot be answered") }]);
  });

  it("clips what it reports to the request's bounds, the summary to one short line", () => {
    const command = `echo ${"x".repeat(20_000)}`;
    const ask = askOf(question("c1", "Bash", { command, description: `a\n${"long ".repeat(100)}` }));
    expect(ask.request.command?.length).toBe(16_384);
    expect(ask.request.summary.length).toBeLessThanOrEqual(200);
    expect(ask.request.summary).not.toContain("\n");
    // The answer hands the CLI its input back whole.
    expect(response(ask.answer(allow)[0])).toMatchObject({
      response: { response: { updatedInput: { command } } },
    });
    const big = askOf(
      question("c2", "Write", { file_path: "/workspace/default/big", content: "y".repeat(100_000) }),
    );
    expect(big.request.diff?.length).toBe(60_000);
  });

  it("reports a question the CLI withdrew (control_cancel_request), writes nothing for it, and answers a question once", () => {
    const driver = claudeDriver(testContext(ASK));
    const withdrawn = askOf(bashQuestion, driver);
    const cancel = driver.read(
      JSON.stringify({ type: "control_cancel_request", request_id: "8f1c2d3e-0000-4000-8000-000000000001" }),
    );
    expect(cancel).toMatchObject({ events: [], write: [] });
    expect(cancel.asks ?? []).toEqual([]);
    // The same ask object, so the runner ends the approval it was asked under.
    expect(cancel.withdrawn).toEqual([withdrawn]);
    expect(cancel.withdrawn?.[0]).toBe(withdrawn);
    expect(withdrawn.answer(allow)).toEqual([]);
    const next = askOf(question("n1", "Bash", { command: "ls -la /" }), driver);
    expect(next.answer(deny("no"))).toHaveLength(1);
    expect(next.answer(allow)).toEqual([]);
  });

  it("leaves other control requests alone, as before", () => {
    const out = claudeDriver(testContext(ASK)).read(
      JSON.stringify({ type: "control_request", request_id: "h1", request: { subtype: "hook_callback" } }),
    );
    expect(out).toMatchObject({ events: [], write: [] });
    expect(out.asks).toBeUndefined();
  });
});

describe("Claude Code adapter, approvals ask: a recorded session", () => {
  const kindOf = (sent: string): SentKind => {
    const o = JSON.parse(sent) as { type: string; message?: { content: string } };
    if (o.type === "user") return { kind: "message", text: o.message?.content ?? "" };
    if (o.type === "control_request") return { kind: "interrupt" };
    return { kind: "handshake" };
  };

  it("maps the recorded stream exactly as in auto mode (turns, tool calls, the interrupt)", () => {
    const sample = loadStream("claude-code-multiturn-interrupt.events.jsonl");
    const auto = replay(claudeDriver(testContext()), sample, kindOf);
    const ask = replay(claudeDriver(testContext(ASK)), sample, kindOf);
    expect(ask.events).toEqual(auto.events);
    expect(ask.written.map((w) => w.line)).toEqual(auto.written.map((w) => w.line));
  });
});
