import { describe, expect, it } from "vitest";
import { unifiedDiff } from "../../container-client/src/agents/acp-request.js";
import type {
  AgentDriver,
  DriverContext,
  DriverOutput,
  PermissionAsk,
} from "../../container-client/src/agents/driver.js";
import { geminiDriver } from "../../container-client/src/agents/gemini.js";
import { opencodeDriver } from "../../container-client/src/agents/opencode.js";
import type { ApprovalDecision } from "../../protocol/approvals.js";
import { eventsOf, loadStream, parsed, printedLines, replay, testContext } from "../support/agent-streams.js";

const line = (value: object) => JSON.stringify({ jsonrpc: "2.0", ...value });
const update = (sessionId: string, update: object) =>
  line({ method: "session/update", params: { sessionId, update } });

const ALLOW: ApprovalDecision = { decision: "allow", scope: "once", by: "answer" };
const ALLOW_SESSION: ApprovalDecision = { decision: "allow", scope: "session", by: "answer" };
const DENY: ApprovalDecision = { decision: "deny", scope: "once", message: "not now", by: "answer" };

/** The handshake with made-up answers, then one message sent: the driver is in a turn. */
function inTurn(driver: AgentDriver, sessionId: string): void {
  const [initialize] = parsed(driver.start());
  const [sessionNew] = parsed(
    driver.read(line({ id: initialize?.id, result: { protocolVersion: 1 } })).write,
  );
  driver.read(line({ id: sessionNew?.id, result: { sessionId } }));
  expect(driver.send(1, "go")).toHaveLength(1);
}

/** The one ask of a question (and that nothing was written or told yet). */
function onlyAsk(out: DriverOutput): PermissionAsk {
  expect(out.write, "a question is not answered before the session decides").toEqual([]);
  expect(out.events).toEqual([]);
  expect(out.asks).toHaveLength(1);
  return out.asks?.[0] as PermissionAsk;
}

const selected = (id: number, optionId: string) => ({
  jsonrpc: "2.0",
  id,
  result: { outcome: { outcome: "selected", optionId } },
});
const cancelled = (id: number) => ({ jsonrpc: "2.0", id, result: { outcome: { outcome: "cancelled" } } });

// ---------------------------------------------------------------------------------------------
// Gemini CLI (questions as docs/approval-hooks.md §3 and the 0.61.0 bundle's runTool make them)

const GEMINI_SESSION = "0aa200ce-357c-4436-bea7-c9f9c0fae259";
const GEMINI_OPTIONS = [
  { optionId: "proceed_always", name: "Allow for this session", kind: "allow_always" },
  { optionId: "proceed_once", name: "Allow", kind: "allow_once" },
  { optionId: "cancel", name: "Reject", kind: "reject_once" },
];
const GEMINI_MCP_OPTIONS = [
  {
    optionId: "proceed_always_server",
    name: "Allow all server tools for this session",
    kind: "allow_always",
  },
  { optionId: "proceed_always_tool", name: "Allow tool for this session", kind: "allow_always" },
  { optionId: "proceed_once", name: "Allow", kind: "allow_once" },
  { optionId: "cancel", name: "Reject", kind: "reject_once" },
];

const geminiQuestion = (id: number, toolCall: object, options: object[] = GEMINI_OPTIONS) =>
  line({
    id,
    method: "session/request_permission",
    params: {
      sessionId: GEMINI_SESSION,
      options,
      toolCall: { status: "pending", locations: [], ...toolCall },
    },
  });

const GEMINI_SHELL = {
  toolCallId: "run_shell_command__run_shell_command_1795312859235_0",
  title: "npm test",
  kind: "execute",
  content: [
    {
      type: "content",
      content: { type: "text", text: "[current working directory /workspace/default] (Run the tests)" },
    },
  ],
};

describe("Gemini CLI asking", () => {
  const context = testContext({ runtime: "gemini", approvals: "ask" });

  it("launches with --approval-mode default instead of --yolo (and its own policies), and the same settings", () => {
    const asking = geminiDriver(context).launch();
    const auto = geminiDriver(testContext({ runtime: "gemini", approvals: "auto" })).launch();
    const at = asking.argv.indexOf("--policy");
    expect([...asking.argv.slice(0, at), ...asking.argv.slice(at + 6)]).toEqual([
      "/opt/agents/cli",
      "--acp",
      "-m",
      "fake-model",
      "--approval-mode",
      "default",
      "--skip-trust",
    ]);
    expect(auto.argv).toEqual(["/opt/agents/cli", "--acp", "-m", "fake-model", "--yolo", "--skip-trust"]);
    expect(geminiDriver(testContext({ runtime: "gemini" })).launch().argv).toEqual(auto.argv);
    // The same settings, but that no workspace .env sets its environment.
    const { advanced, ...askingSettings } = JSON.parse(asking.files[0]?.content ?? "");
    expect(advanced).toEqual({ ignoreLocalEnv: true });
    expect(askingSettings).toEqual(JSON.parse(auto.files[0]?.content ?? ""));
    expect(asking.files[0]?.path).toBe(auto.files[0]?.path);
    expect(asking.env).toEqual(auto.env);
  });

  it("asks about a shell command, and answers allow with proceed_once and deny with cancel", () => {
    const driver = geminiDriver(context);
    inTurn(driver, GEMINI_SESSION);
    const ask = onlyAsk(driver.read(geminiQuestion(0, GEMINI_SHELL)));
    expect(ask.request).toEqual({
      kind: "shell",
      command: "npm test",
      cwd: "/workspace/default",
      summary: "Run: npm test",
    });
    expect(parsed(ask.answer(ALLOW))).toEqual([selected(0, "proceed_once")]);
    expect(ask.answer(DENY), "a question is answered once").toEqual([]);

    const again = onlyAsk(driver.read(geminiQuestion(1, GEMINI_SHELL)));
    expect(parsed(again.answer(DENY))).toEqual([selected(1, "cancel")]);
  });

  it("never picks the CLI's own 'always' option: allow for the session is the session's to remember", () => {
    const driver = geminiDriver(context);
    const ask = onlyAsk(driver.read(geminiQuestion(3, GEMINI_SHELL)));
    expect(parsed(ask.answer(ALLOW_SESSION))).toEqual([selected(3, "proceed_once")]);
  });

  it("takes a shell command's directory from `[in <dir>]`, relative to the workspace", () => {
    const ask = onlyAsk(
      geminiDriver(context).read(
        geminiQuestion(2, {
          ...GEMINI_SHELL,
          title: "ls -la",
          content: [
            { type: "content", content: { type: "text", text: "[in src/lib] (List it) [background]" } },
          ],
        }),
      ),
    );
    expect(ask.request).toMatchObject({
      kind: "shell",
      command: "ls -la",
      cwd: "/workspace/default/src/lib",
    });
  });

  it("asks about an edit with its path and a unified diff of the change", () => {
    const ask = onlyAsk(
      geminiDriver(context).read(
        geminiQuestion(4, {
          toolCallId: "replace__replace_1795312859235_1",
          title: "src/a.ts: const a = 1; => const a = 2;",
          kind: "edit",
          content: [
            {
              type: "diff",
              path: "/workspace/default/src/a.ts",
              oldText: "line 1\nconst a = 1;\nline 3\n",
              newText: "line 1\nconst a = 2;\nline 3\n",
              _meta: { kind: "modify" },
            },
          ],
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "edit",
      path: "/workspace/default/src/a.ts",
      diff: [
        "--- /workspace/default/src/a.ts",
        "+++ /workspace/default/src/a.ts",
        "@@ -1,3 +1,3 @@",
        " line 1",
        "-const a = 1;",
        "+const a = 2;",
        " line 3",
        "",
      ].join("\n"),
      cwd: "/workspace/default",
      summary: "Edit src/a.ts",
    });
  });

  it("asks about a new file with its whole content as the diff", () => {
    const ask = onlyAsk(
      geminiDriver(context).read(
        geminiQuestion(5, {
          toolCallId: "write_file__write_file_1795312859235_2",
          title: "Writing to notes.md",
          kind: "edit",
          content: [
            {
              type: "diff",
              path: "/workspace/default/notes.md",
              oldText: null,
              newText: "hello\n",
              _meta: { kind: "add" },
            },
          ],
        }),
      ),
    );
    expect(ask.request).toMatchObject({
      kind: "edit",
      path: "/workspace/default/notes.md",
      diff: "--- /dev/null\n+++ /workspace/default/notes.md\n@@ -0,0 +1,1 @@\n+hello\n",
      summary: "Create notes.md",
    });
  });

  it("asks about another MCP server's tool by the model's name for it, with its arguments", () => {
    const driver = geminiDriver(context);
    inTurn(driver, GEMINI_SESSION);
    const callId = "mcp_echo_echo__mcp_echo_echo_1795312859235_0";
    const ask = onlyAsk(
      driver.read(
        geminiQuestion(
          6,
          {
            toolCallId: callId,
            title: "echo (echo MCP Server)",
            kind: "other",
            content: [
              { type: "content", content: { type: "text", text: '{"text":"ping from fake model"}' } },
            ],
          },
          GEMINI_MCP_OPTIONS,
        ),
      ),
    );
    expect(ask.request).toEqual({
      kind: "mcp_tool",
      tool: "mcp_echo_echo",
      arguments: { text: "ping from fake model" },
      cwd: "/workspace/default",
      summary: "Call mcp_echo_echo",
    });
    expect(parsed(ask.answer(ALLOW))).toEqual([selected(6, "proceed_once")]);
    // Allowed, Gemini sends only the call's end: its events name it and its input as the question did.
    const done = driver.read(
      update(GEMINI_SESSION, {
        sessionUpdate: "tool_call_update",
        toolCallId: callId,
        status: "completed",
        title: "echo (echo MCP Server)",
        content: [{ type: "content", content: { type: "text", text: '{"echo":"ping"}' } }],
        kind: "other",
      }),
    );
    expect(done.events).toEqual([
      {
        type: "tool_call",
        call_id: callId,
        name: "echo (echo MCP Server)",
        input: { text: "ping from fake model" },
      },
      { type: "tool_result", call_id: callId, output: '{"echo":"ping"}', is_error: false },
    ]);
  });

  it("allows a tool of our own MCP server at once, without asking", () => {
    const out = geminiDriver(context).read(
      geminiQuestion(
        7,
        {
          toolCallId: "mcp_oubliette_write_file__mcp_oubliette_write_file_1795312859235_0",
          title: "write_file (oubliette MCP Server)",
          kind: "other",
          content: [{ type: "content", content: { type: "text", text: '{"path":"a"}' } }],
        },
        GEMINI_MCP_OPTIONS,
      ),
    );
    expect(out.asks ?? []).toEqual([]);
    expect(parsed(out.write)).toEqual([selected(7, "proceed_once")]);
    expect(out.events).toEqual([
      {
        type: "system",
        subtype: "auto_answer",
        message:
          "allowed write_file (oubliette MCP Server) (a tool of our own MCP server: the session gates it)",
        data: { method: "session/request_permission", granted: true },
      },
    ]);
  });

  it("asks about reading an attached file outside the workspace", () => {
    const ask = onlyAsk(
      geminiDriver(context).read(
        geminiQuestion(
          8,
          {
            toolCallId: "resolve-prompt-/etc/hosts-6c3e",
            title: "Allow access to absolute path: /etc/hosts",
            kind: "read",
            content: [],
          },
          [
            { optionId: "proceed_once", name: "Allow once", kind: "allow_once" },
            { optionId: "cancel", name: "Deny", kind: "reject_once" },
          ],
        ),
      ),
    );
    expect(ask.request).toEqual({
      kind: "read",
      path: "/etc/hosts",
      cwd: "/workspace/default",
      summary: "Read /etc/hosts",
    });
  });

  it("still asks about a question it cannot map, as a shell request in the CLI's own words", () => {
    const ask = onlyAsk(
      geminiDriver(context).read(
        geminiQuestion(9, {
          toolCallId: "ask_user__ask_user_1795312859235_3",
          title: "Which branch?",
          kind: "other",
          content: [{ type: "content", content: { type: "text", text: "main or dev" } }],
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: "Which branch? main or dev",
      cwd: "/workspace/default",
      summary: "Allow: Which branch?",
    });
  });

  it("asks, and can answer, even a question it cannot read at all", () => {
    const driver = geminiDriver(context);
    const out = driver.read(line({ id: 10, method: "session/request_permission", params: { toolCall: 42 } }));
    const ask = onlyAsk(out);
    expect(ask.request).toMatchObject({ kind: "shell", command: "an unknown tool call" });
    // No options offered: allow picks Gemini's allow-once id, deny cancels.
    expect(parsed(ask.answer(ALLOW))).toEqual([selected(10, "proceed_once")]);
    const other = onlyAsk(driver.read(line({ id: 11, method: "session/request_permission", params: null })));
    expect(parsed(other.answer(DENY))).toEqual([cancelled(11)]);
  });

  it("answers an open question cancelled after an interrupt, and nothing for it later", () => {
    const driver = geminiDriver(context);
    inTurn(driver, GEMINI_SESSION);
    const ask = onlyAsk(driver.read(geminiQuestion(12, GEMINI_SHELL)));
    expect(parsed(driver.interrupt())).toEqual([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: GEMINI_SESSION } },
      cancelled(12),
    ]);
    expect(ask.answer(ALLOW)).toEqual([]);
  });

  it("in auto mode answers a question at once, as it always did", () => {
    for (const approvals of [undefined, "auto"] as const) {
      const out = geminiDriver(testContext({ runtime: "gemini", approvals })).read(
        geminiQuestion(0, GEMINI_SHELL),
      );
      expect(out.asks).toBeUndefined();
      expect(parsed(out.write)).toEqual([selected(0, "proceed_once")]);
      expect(out.events).toEqual([
        {
          type: "system",
          subtype: "auto_answer",
          message: "allowed npm test (Allow)",
          data: { method: "session/request_permission", granted: true },
        },
      ]);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// OpenCode (questions as docs/approval-hooks.md §4 and the 1.18.33 ACP permission handler make them)

const OPENCODE_SESSION = "ses_dfee938cdffeT0qBR3StISebjS";
const OPENCODE_OPTIONS = [
  { optionId: "once", kind: "allow_once", name: "Allow once" },
  { optionId: "always", kind: "allow_always", name: "Always allow" },
  { optionId: "reject", kind: "reject_once", name: "Reject" },
];

const opencodeQuestion = (id: number, toolCall: object) =>
  line({
    id,
    method: "session/request_permission",
    params: {
      sessionId: OPENCODE_SESSION,
      toolCall: { status: "pending", locations: [], ...toolCall },
      options: OPENCODE_OPTIONS,
    },
  });

/** OpenCode's updates of a call that starts: `pending` with an empty input, then `in_progress` with it. */
function opencodeCallStarts(
  driver: AgentDriver,
  toolCallId: string,
  title: string,
  kind: string,
  input: object,
) {
  const start = { toolCallId, title, kind, locations: [] };
  driver.read(
    update(OPENCODE_SESSION, { sessionUpdate: "tool_call", ...start, status: "pending", rawInput: {} }),
  );
  driver.read(
    update(OPENCODE_SESSION, {
      sessionUpdate: "tool_call_update",
      ...start,
      status: "in_progress",
      rawInput: input,
    }),
  );
}

describe("OpenCode asking", () => {
  const context = testContext({ runtime: "opencode", approvals: "ask" });
  const config = (ctx: DriverContext) => JSON.parse(opencodeDriver(ctx).launch().files[0]?.content ?? "");

  it("launches with rules that ask for commands, edits and fetches but allow our own server's tools, and goes on after a deny", () => {
    const asking = config(context);
    expect(asking.permission).toEqual({
      bash: "ask",
      edit: "ask",
      webfetch: "ask",
      websearch: "ask",
      doom_loop: "ask",
      "oubliette_*": "allow",
    });
    expect(Object.keys(asking.permission), "no `*` rule overrides OpenCode's own asking rules").not.toContain(
      "*",
    );
    expect(asking.experimental).toEqual({ continue_loop_on_deny: true });
    expect(opencodeDriver(context).launch().argv).toEqual(["/opt/agents/cli", "acp"]);

    for (const approvals of [undefined, "auto"] as const) {
      const auto = config(testContext({ runtime: "opencode", approvals }));
      expect(auto.permission).toEqual({ "*": "allow" });
      expect(auto.experimental).toBeUndefined();
    }
    const {
      permission: _asking,
      experimental: _,
      instructions: _instructions,
      plugin: _plugin,
      ...rest
    } = asking;
    const { permission: _auto, ...autoRest } = config(testContext({ runtime: "opencode" }));
    expect(rest).toEqual(autoRest);
  });

  it("asks about a shell command in the call's directory, and answers allow with once and deny with reject", () => {
    const driver = opencodeDriver(context);
    inTurn(driver, OPENCODE_SESSION);
    opencodeCallStarts(driver, "call_1", "npm test", "execute", {
      command: "npm test",
      description: "Run the tests",
      workdir: "packages/app",
    });
    const ask = onlyAsk(
      driver.read(
        opencodeQuestion(0, {
          toolCallId: "call_1",
          title: "npm test",
          kind: "execute",
          rawInput: { command: "npm test" },
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: "npm test",
      cwd: "/workspace/default/packages/app",
      summary: "Run: npm test",
    });
    expect(parsed(ask.answer(ALLOW_SESSION))).toEqual([selected(0, "once")]);

    const again = onlyAsk(
      driver.read(
        opencodeQuestion(1, {
          toolCallId: "call_2",
          title: "rm -rf x",
          kind: "execute",
          rawInput: { command: "rm -rf x" },
        }),
      ),
    );
    expect(again.request).toMatchObject({ command: "rm -rf x", cwd: "/workspace/default" });
    // ACP carries no message: the deny is the reject option, the model is told OpenCode's own words.
    expect(parsed(again.answer(DENY))).toEqual([selected(1, "reject")]);
  });

  it("asks about an edit with its path and OpenCode's unified diff", () => {
    const diff =
      "Index: /workspace/default/src/a.ts\n===\n--- /workspace/default/src/a.ts\n+++ /workspace/default/src/a.ts\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    const ask = onlyAsk(
      opencodeDriver(context).read(
        opencodeQuestion(2, {
          toolCallId: "call_3",
          title: "src/a.ts",
          kind: "edit",
          rawInput: { filepath: "/workspace/default/src/a.ts", diff },
          locations: [{ path: "/workspace/default/src/a.ts" }],
          content: [{ type: "diff", path: "/workspace/default/src/a.ts", oldText: "a\n", newText: "b\n" }],
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "edit",
      path: "/workspace/default/src/a.ts",
      diff,
      cwd: "/workspace/default",
      summary: "Edit src/a.ts",
    });
  });

  it("asks about each file of a patch, allowing it when every file is allowed and rejecting it at the first deny", () => {
    const patch = (id: number) =>
      opencodeQuestion(id, {
        toolCallId: `call_p${id}`,
        title: "2 files",
        kind: "edit",
        rawInput: {
          filepath: "src/a.ts, src/b.ts",
          diff: "…",
          files: [
            {
              filePath: "/workspace/default/src/a.ts",
              relativePath: "src/a.ts",
              type: "update",
              patch: "@@ a",
            },
            {
              filePath: "/workspace/default/src/b.ts",
              relativePath: "src/b.ts",
              type: "move",
              patch: "@@ b",
              movePath: "/workspace/default/lib/b.ts",
            },
          ],
        },
      });
    const driver = opencodeDriver(context);
    const out = driver.read(patch(3));
    expect(out.write).toEqual([]);
    expect(out.asks?.map((ask) => ask.request)).toEqual([
      {
        kind: "edit",
        path: "/workspace/default/src/a.ts",
        diff: "@@ a",
        cwd: "/workspace/default",
        summary: "Edit src/a.ts",
      },
      {
        kind: "edit",
        path: "/workspace/default/src/b.ts",
        diff: "@@ b",
        cwd: "/workspace/default",
        summary: "Move src/b.ts",
      },
      {
        kind: "edit",
        path: "/workspace/default/lib/b.ts",
        diff: "@@ b",
        cwd: "/workspace/default",
        summary: "Move src/b.ts to lib/b.ts",
      },
    ]);
    const [a, b, moved] = out.asks as PermissionAsk[];
    expect(a?.answer(ALLOW)).toEqual([]);
    expect(b?.answer(ALLOW)).toEqual([]);
    expect(parsed(moved?.answer(ALLOW) ?? [])).toEqual([selected(3, "once")]);

    const [first, second, third] = driver.read(patch(4)).asks as PermissionAsk[];
    expect(parsed(second?.answer(DENY) ?? [])).toEqual([selected(4, "reject")]);
    expect(first?.answer(ALLOW)).toEqual([]);
    expect(third?.answer(ALLOW)).toEqual([]);
  });

  it("asks about another MCP server's tool with the arguments of the update that started it", () => {
    const driver = opencodeDriver(context);
    inTurn(driver, OPENCODE_SESSION);
    // The recorded session's call as it starts (opencode-acp-multiturn-cancel lines 12-13), then its question.
    const starts = printedLines(loadStream("opencode-acp-multiturn-cancel.events.jsonl")).filter(
      (printed) => printed.includes('"call_1795314601910"') && /"(pending|in_progress)"/.test(printed),
    );
    expect(starts).toHaveLength(2);
    const told = starts.flatMap((printed) => driver.read(printed).events);
    expect(told.map((event) => event.type)).toEqual(["tool_call"]);
    const ask = onlyAsk(
      driver.read(
        opencodeQuestion(5, {
          toolCallId: "call_1795314601910",
          title: "echo_echo",
          kind: "other",
          rawInput: {},
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "mcp_tool",
      tool: "echo_echo",
      arguments: { text: "ping from fake model" },
      cwd: "/workspace/default",
      summary: "Call echo_echo",
    });
  });

  it("allows a tool of our own MCP server at once, without asking", () => {
    const out = opencodeDriver(context).read(
      opencodeQuestion(6, {
        toolCallId: "call_o",
        title: "oubliette_write_file",
        kind: "other",
        rawInput: {},
      }),
    );
    expect(out.asks ?? []).toEqual([]);
    expect(parsed(out.write)).toEqual([selected(6, "once")]);
    expect(out.events[0]).toMatchObject({ type: "system", subtype: "auto_answer", data: { granted: true } });
  });

  it("asks about a command that reaches outside the workspace even when its name looks like our tools", () => {
    const ask = onlyAsk(
      opencodeDriver(context).read(
        opencodeQuestion(7, {
          toolCallId: "call_x",
          title: "oubliette_x /etc",
          kind: "other",
          rawInput: { command: "oubliette_x /etc", directories: ["/etc"], patterns: ["/etc/*"] },
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: "oubliette_x /etc",
      cwd: "/workspace/default",
      summary: "Run (outside the workspace: /etc): oubliette_x /etc",
    });
  });

  it("asks about a file outside the workspace as a read", () => {
    const ask = onlyAsk(
      opencodeDriver(context).read(
        opencodeQuestion(8, {
          toolCallId: "call_r",
          title: "/home/me",
          kind: "other",
          rawInput: { filepath: "/home/me/notes.txt", parentDir: "/home/me" },
        }),
      ),
    );
    expect(ask.request).toMatchObject({ kind: "read", path: "/home/me/notes.txt" });
  });

  it("asks about a `.env` read with the path from the call's input", () => {
    const driver = opencodeDriver(context);
    inTurn(driver, OPENCODE_SESSION);
    opencodeCallStarts(driver, "call_env", "read", "read", { filePath: "/workspace/default/.env" });
    const ask = onlyAsk(
      driver.read(opencodeQuestion(9, { toolCallId: "call_env", title: "read", kind: "read", rawInput: {} })),
    );
    expect(ask.request).toMatchObject({
      kind: "read",
      path: "/workspace/default/.env",
      summary: "Read /workspace/default/.env",
    });
  });

  it("asks about anything else in OpenCode's own words, its metadata included", () => {
    const ask = onlyAsk(
      opencodeDriver(context).read(
        opencodeQuestion(10, {
          toolCallId: "call_d",
          title: "doom_loop",
          kind: "other",
          rawInput: { tool: "grep", input: { pattern: "x" } },
        }),
      ),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: 'doom_loop {"tool":"grep","input":{"pattern":"x"}}',
      cwd: "/workspace/default",
      summary: "Allow: doom_loop",
    });
  });

  it("answers an open question cancelled after an interrupt", () => {
    const driver = opencodeDriver(context);
    inTurn(driver, OPENCODE_SESSION);
    const ask = onlyAsk(
      driver.read(
        opencodeQuestion(11, { toolCallId: "c", title: "ls", kind: "execute", rawInput: { command: "ls" } }),
      ),
    );
    expect(parsed(driver.interrupt())).toEqual([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: OPENCODE_SESSION } },
      cancelled(11),
    ]);
    expect(ask.answer(DENY)).toEqual([]);
    expect(parsed(driver.interrupt()), "nothing open any more").toEqual([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: OPENCODE_SESSION } },
    ]);
  });
});

/** Asking, OpenCode's MCP server also gets OpenCode's server password emptied (opencode.ts); that aside, the same. */
function withoutEmptiedPassword(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
    Array.isArray(v) ? v.filter((e) => !(e?.name === "OPENCODE_SERVER_PASSWORD" && e?.value === "")) : v,
  );
}

describe("ACP drivers asking, replaying a recorded session without questions", () => {
  it.each([
    {
      file: "opencode-acp-multiturn-cancel.events.jsonl",
      driver: opencodeDriver,
      runtime: "opencode" as const,
    },
    { file: "gemini-acp-multiturn-cancel.events.jsonl", driver: geminiDriver, runtime: "gemini" as const },
  ])("$runtime writes and tells the same as unattended", ({ file, driver, runtime }) => {
    const mcpServer = {
      name: "echo",
      command: "node",
      args: ["/opt/probe/echo-mcp.mjs"],
      env: { ECHO_MCP_LOG: "/workspace/default/echo-mcp.log" },
    };
    const run = (approvals: "ask" | "auto") =>
      replay(driver(testContext({ runtime, approvals, mcpServer })), loadStream(file), {
        messages: ["Please CALL_TOOL echo", "Now a SLOW answer", "after the cancel"],
        interruptMethod: "session/cancel",
        normalise: withoutEmptiedPassword,
      });
    const asking = run("ask");
    expect(asking.extra).toEqual([]);
    expect(asking.events).toEqual(run("auto").events);
    expect(eventsOf(asking.events, "tool_call")).toHaveLength(1);
  });
});

describe("unifiedDiff", () => {
  it("keeps three lines of context around the changed lines", () => {
    const before = ["1", "2", "3", "4", "5", "6", "7", "8", "9"].join("\n");
    const after = ["1", "2", "3", "4", "five", "6", "7", "8", "9"].join("\n");
    expect(unifiedDiff("f", before, after)).toBe(
      ["--- f", "+++ f", "@@ -2,7 +2,7 @@", " 2", " 3", " 4", "-5", "+five", " 6", " 7", " 8", ""].join("\n"),
    );
  });

  it("writes a deletion against /dev/null, and no hunk when nothing changed", () => {
    expect(unifiedDiff("f", "a\nb\n", "")).toBe("--- f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n");
    expect(unifiedDiff("f", "a\n", "a\n")).toBe("--- f\n+++ f\n");
  });
});
