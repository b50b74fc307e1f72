import { describe, expect, it } from "vitest";
import { codexDriver } from "../../container-client/src/agents/codex.js";
import { commandLine, shellJoin, shellSplit } from "../../container-client/src/agents/codex-command.js";
import type { AgentDriver, DriverContext, PermissionAsk } from "../../container-client/src/agents/driver.js";
import {
  type ApprovalDecision,
  ApprovalRequestSchema,
  DEFAULT_DENIAL_MESSAGE,
} from "../../protocol/approvals.js";
import { parsed, testContext } from "../support/agent-streams.js";

const WORKSPACE = "/workspace/default";
const context = (approvals?: DriverContext["approvals"]) =>
  testContext({ runtime: "codex", model: "gpt-5", command: ["/opt/agents/codex/codex"], approvals });

const ALLOW: ApprovalDecision = { decision: "allow", scope: "once", by: "answer" };
const ALLOW_SESSION: ApprovalDecision = { decision: "allow", scope: "session", by: "session_allowance" };
const DENY: ApprovalDecision = { decision: "deny", scope: "once", by: "answer", message: "Not that one." };
const DENY_SILENT: ApprovalDecision = { decision: "deny", scope: "once", by: "timeout" };

/*
 * Lines `codex app-server` 0.169.0 printed in ask mode (thread `approvalPolicy: "untrusted"`)
 * against the fake model, its workspace renamed to /workspace/default: a command, a patch of two
 * files (its `item/started` first), a delete, and an MCP tool call's approval for another server
 * and for Oubliette's own.
 */
const COMMAND_REQUEST = {
  method: "item/commandExecution/requestApproval",
  id: 0,
  params: {
    kind: "command",
    threadId: "01a21546-9e68-7f00-a7b6-4634f2b5257b",
    turnId: "01a21546-9e84-7fe0-96ec-c974d27b8e3e",
    itemId: "call_e619a2710004",
    startedAtMs: 1795653279528,
    environmentId: "local",
    command: "/bin/bash -lc 'echo six > six.txt'",
    cwd: WORKSPACE,
    commandActions: [{ type: "unknown", command: "echo six > six.txt" }],
    proposedExecpolicyAmendment: ["/bin/bash", "-lc", "echo six > six.txt"],
    availableDecisions: [
      "accept",
      { acceptWithExecpolicyAmendment: { execpolicy_amendment: ["/bin/bash", "-lc", "echo six > six.txt"] } },
      "cancel",
    ],
  },
};
const PATCH_STARTED = {
  method: "item/started",
  params: {
    item: {
      type: "fileChange",
      id: "call_e619a2710013",
      changes: [
        { path: `${WORKSPACE}/hello.txt`, kind: { type: "add" }, diff: "hello\n" },
        {
          path: `${WORKSPACE}/six.txt`,
          kind: { type: "update", move_path: null },
          diff: "@@ -1 +1 @@\n-six\n+seven\n",
        },
      ],
      status: "inProgress",
      startedAtMs: 1795653279672,
      completedAtMs: null,
    },
    threadId: "01a21546-9e68-7f00-a7b6-4634f2b5257b",
    turnId: "01a21546-9e84-7fe0-96ec-c974d27b8e3e",
    startedAtMs: 1795653279672,
  },
  emittedAtMs: 1795653279672,
};
const PATCH_REQUEST = {
  method: "item/fileChange/requestApproval",
  id: 3,
  params: {
    threadId: "01a21546-9e68-7f00-a7b6-4634f2b5257b",
    turnId: "01a21546-9e84-7fe0-96ec-c974d27b8e3e",
    itemId: "call_e619a2710013",
    startedAtMs: 1795653279673,
    reason: null,
    grantRoot: null,
  },
};
const DELETE_STARTED = {
  method: "item/started",
  params: {
    item: {
      type: "fileChange",
      id: "call_f4065b730006",
      changes: [{ path: `${WORKSPACE}/gone.txt`, kind: { type: "delete" }, diff: "a\nb\n" }],
      status: "inProgress",
    },
    threadId: "t",
    turnId: "u",
  },
};
const DELETE_REQUEST = {
  method: "item/fileChange/requestApproval",
  id: 1,
  params: {
    threadId: "t",
    turnId: "u",
    itemId: "call_f4065b730006",
    startedAtMs: 1,
    reason: null,
    grantRoot: null,
  },
};
const elicitation = (server: string, text: string, id: number) => ({
  method: "mcpServer/elicitation/request",
  id,
  params: {
    threadId: "01a21546-9e68-7f00-a7b6-4634f2b5257b",
    turnId: "01a21546-9e84-7fe0-96ec-c974d27b8e3e",
    serverName: server,
    mode: "form",
    _meta: {
      codex_approval_kind: "mcp_tool_call",
      persist: ["session", "always"],
      tool_name: "write_note",
      tool_annotations: { destructiveHint: true },
      tool_description: "Writes a note",
      tool_params: { text },
      tool_params_display: [{ name: "text", value: text, display_name: "text" }],
    },
    message: `Allow the ${server} MCP server to run tool "write_note"?`,
    requestedSchema: { type: "object", properties: {} },
  },
});
const MCP_OTHER = elicitation("other", "from the model", 4);
const MCP_OWN = elicitation("oubliette", "to ourselves", 5);

const line = (value: unknown) => JSON.stringify(value);

/** The driver's one ask for `request` (it wrote nothing and said nothing of its own). */
function askOf(driver: AgentDriver, request: unknown): PermissionAsk {
  const out = driver.read(line(request));
  expect(out.write).toEqual([]);
  expect(out.events).toEqual([]);
  expect(out.asks).toHaveLength(1);
  const ask = out.asks?.[0] as PermissionAsk;
  // Every request is one the session's schema takes.
  expect(ApprovalRequestSchema.safeParse(ask.request).success).toBe(true);
  return ask;
}

/** The lines that answer `request` with `decision`, asked afresh (an answered question answers no more). */
const answerOf = (request: unknown, decision: ApprovalDecision) =>
  askOf(codexDriver(context("ask")), request).answer(decision);

function handshake(driver: AgentDriver): { threadParams: unknown } {
  const [initialize] = parsed(driver.start());
  const after = parsed(driver.read(line({ id: initialize?.id, result: {} })).write);
  driver.read(line({ id: after[1]?.id, result: { thread: { id: "thr_1" } } }));
  return { threadParams: after[1]?.params };
}

describe("codex in ask mode: the launch", () => {
  it("starts (and resumes) the thread with approval policy untrusted, a person as reviewer, full access", () => {
    expect(handshake(codexDriver(context("ask"))).threadParams).toEqual({
      cwd: WORKSPACE,
      approvalPolicy: "untrusted",
      approvalsReviewer: "user",
      sandbox: "danger-full-access",
    });
    const resumed = codexDriver({ ...context("ask"), resume: "thr_9" });
    const [initialize] = parsed(resumed.start());
    const after = parsed(resumed.read(line({ id: initialize?.id, result: {} })).write);
    expect(after[1]).toMatchObject({
      method: "thread/resume",
      params: { threadId: "thr_9", approvalPolicy: "untrusted", approvalsReviewer: "user" },
    });
  });

  it("writes approval_policy on-request in config.toml (0.169 refuses untrusted there); the rest as in auto", () => {
    const ask = codexDriver(context("ask")).launch();
    const auto = codexDriver(context("auto")).launch();
    expect(ask.argv).toEqual(auto.argv);
    expect(ask.env).toEqual(auto.env);
    const config = ask.files[0]?.content ?? "";
    expect(config).toContain('approval_policy = "on-request"\n');
    expect(config).not.toContain('approval_policy = "untrusted"');
    // Besides the workspace and the directories above it, marked untrusted (no project config).
    const projects = config.indexOf("\n[projects.");
    expect(projects).toBeGreaterThan(0);
    expect(config.slice(0, projects).replace('"on-request"', '"never"')).toBe(auto.files[0]?.content);
  });
});

describe("codex in auto mode (or none said) stays as it was", () => {
  it.each([undefined, "auto" as const])(
    "approvals %s: never, and Codex's questions answered at once",
    (mode) => {
      const driver = codexDriver(context(mode));
      expect(handshake(driver).threadParams).toEqual({
        cwd: WORKSPACE,
        approvalPolicy: "never",
        sandbox: "danger-full-access",
      });
      expect(driver.launch().files[0]?.content).toContain('approval_policy = "never"\n');
      for (const [request, result] of [
        [COMMAND_REQUEST, { decision: "accept" }],
        [PATCH_REQUEST, { decision: "accept" }],
        [MCP_OTHER, { action: "accept", content: {}, _meta: null }],
      ] as const) {
        const out = driver.read(line(request));
        expect(out.asks).toBeUndefined();
        expect(parsed(out.write)).toEqual([{ id: request.id, result }]);
        expect(out.events[0]).toMatchObject({ type: "system", subtype: "auto_answer" });
      }
    },
  );
});

describe("codex in ask mode: commands", () => {
  it("asks about the command Codex runs in its shell, and answers accept or decline (the turn goes on)", () => {
    const ask = askOf(codexDriver(context("ask")), COMMAND_REQUEST);
    expect(ask.request).toEqual({
      kind: "shell",
      command: "echo six > six.txt",
      cwd: WORKSPACE,
      summary: "Run: echo six > six.txt",
    });
    expect(ask.answer(ALLOW)).toEqual(['{"id":0,"result":{"decision":"accept"}}']);
    // Allow for the session is remembered by the session, never by Codex's own acceptForSession.
    expect(answerOf(COMMAND_REQUEST, ALLOW_SESSION)).toEqual(['{"id":0,"result":{"decision":"accept"}}']);
    expect(answerOf(COMMAND_REQUEST, DENY)).toEqual(['{"id":0,"result":{"decision":"decline"}}']);
    expect(answerOf(COMMAND_REQUEST, DENY_SILENT)).toEqual(['{"id":0,"result":{"decision":"decline"}}']);
  });

  it("keeps a line that is not just a shell wrapper whole, adds Codex's reason, takes the cwd it names", () => {
    const ask = askOf(codexDriver(context("ask")), {
      ...COMMAND_REQUEST,
      params: {
        ...COMMAND_REQUEST.params,
        command: "npm test -- --watch=false",
        cwd: "/srv/app",
        reason: "tests",
      },
    });
    expect(ask.request).toEqual({
      kind: "shell",
      command: "npm test -- --watch=false",
      cwd: "/srv/app",
      summary: "Run: npm test -- --watch=false (tests)",
    });
  });

  it("asks about network access (no command), input to a running command, and clips what is long", () => {
    const driver = codexDriver(context("ask"));
    const network = askOf(driver, {
      id: 1,
      method: "item/commandExecution/requestApproval",
      params: { itemId: "i", networkApprovalContext: { host: "example.com", protocol: "https" } },
    });
    expect(network.request).toEqual({
      kind: "shell",
      command: "network access to https://example.com",
      cwd: WORKSPACE,
      summary: "Allow network access to example.com",
    });
    const stdin = askOf(driver, {
      id: 2,
      method: "item/commandExecution/requestApproval",
      params: { kind: "writeStdin", command: "y", cwd: WORKSPACE },
    });
    expect(stdin.request.summary).toBe("Send input to a running command: y");
    const long = askOf(driver, {
      id: 3,
      method: "item/commandExecution/requestApproval",
      params: { command: `echo ${"x".repeat(20_000)}` },
    });
    expect(long.request.command).toHaveLength(16_384);
    expect(long.request.summary.length).toBeLessThanOrEqual(200);
  });

  it("still asks about a command it cannot read, in Codex's own words", () => {
    const driver = codexDriver(context("ask"));
    const odd = askOf(driver, { id: 4, method: "item/commandExecution/requestApproval", params: 42 });
    expect(odd.request).toEqual({
      kind: "shell",
      command: "Codex asks to run a command it did not name",
      cwd: WORKSPACE,
      summary: "Codex asks to run a command it did not name",
    });
    const reasoned = askOf(driver, {
      id: 5,
      method: "item/commandExecution/requestApproval",
      params: { reason: "needs to escalate" },
    });
    expect(reasoned.request.command).toBe("needs to escalate");
    expect(reasoned.answer(DENY)).toEqual(['{"id":5,"result":{"decision":"decline"}}']);
  });

  it("maps v1's execCommandApproval (argv) with its own decisions, a deny carrying its message", () => {
    const driver = codexDriver(context("ask"));
    const v1 = {
      id: "x1",
      method: "execCommandApproval",
      params: {
        conversationId: "c",
        callId: "call_1",
        approvalId: null,
        command: ["git", "commit", "-m", "it's done"],
        cwd: "/srv/app",
        reason: null,
        parsedCmd: [],
      },
    };
    const ask = askOf(driver, v1);
    expect(ask.request).toEqual({
      kind: "shell",
      command: `git commit -m 'it'"'"'s done'`,
      cwd: "/srv/app",
      summary: `Run: git commit -m 'it'"'"'s done'`,
    });
    expect(ask.answer(ALLOW)).toEqual(['{"id":"x1","result":{"decision":"approved"}}']);
    expect(parsed(answerOf(v1, DENY))).toEqual([
      { id: "x1", result: { decision: { denied: { rejection: "Not that one." } } } },
    ]);
    expect(parsed(answerOf(v1, DENY_SILENT))).toEqual([
      { id: "x1", result: { decision: { denied: { rejection: DEFAULT_DENIAL_MESSAGE } } } },
    ]);
    const wrapped = askOf(driver, {
      id: "x2",
      method: "execCommandApproval",
      params: { command: ["/bin/bash", "-lc", "npm test"], cwd: WORKSPACE },
    });
    expect(wrapped.request.command).toBe("npm test");
  });
});

describe("codex in ask mode: questions answered once, or taken back", () => {
  it("answers a question once; Codex's own resolving of it after that withdraws nothing", () => {
    const driver = codexDriver(context("ask"));
    const ask = askOf(driver, COMMAND_REQUEST);
    expect(ask.answer(ALLOW)).toHaveLength(1);
    expect(ask.answer(DENY)).toEqual([]);
    const resolved = driver.read(
      line({ method: "serverRequest/resolved", params: { threadId: "t", requestId: 0 } }),
    );
    expect(resolved).toEqual({ events: [], write: [] });
  });

  it("withdraws a question Codex settles first (an interrupt), and then answers it with no line", () => {
    const driver = codexDriver(context("ask"));
    const ask = askOf(driver, COMMAND_REQUEST);
    const other = askOf(driver, MCP_OTHER);
    const resolved = driver.read(
      line({ method: "serverRequest/resolved", params: { threadId: "t", requestId: 0 } }),
    );
    expect(resolved.withdrawn).toHaveLength(1);
    expect(resolved.withdrawn?.[0]).toBe(ask);
    expect(ask.answer(ALLOW)).toEqual([]);
    // The other question still waits, and is answered.
    expect(other.answer(ALLOW)).toHaveLength(1);
  });
});

describe("codex in ask mode: file changes", () => {
  it("asks about a patch with the files of its item: the first's path, the diff of all", () => {
    const driver = codexDriver(context("ask"));
    // The item still makes its tool_call event, as before.
    expect(driver.read(line(PATCH_STARTED)).events).toMatchObject([
      { type: "tool_call", name: "apply_patch" },
    ]);
    const ask = askOf(driver, PATCH_REQUEST);
    expect(ask.request).toEqual({
      kind: "edit",
      path: `${WORKSPACE}/hello.txt`,
      diff: [
        `*** Create ${WORKSPACE}/hello.txt ***`,
        "hello",
        "",
        `*** Edit ${WORKSPACE}/six.txt ***`,
        "@@ -1 +1 @@",
        "-six",
        "+seven",
        "",
      ].join("\n"),
      cwd: WORKSPACE,
      summary: "Edit 2 files",
    });
    expect(ask.answer(ALLOW)).toEqual(['{"id":3,"result":{"decision":"accept"}}']);
    expect(answerOf(PATCH_REQUEST, DENY)).toEqual(['{"id":3,"result":{"decision":"decline"}}']);
  });

  it("names one file's change: an update's unified diff, a deleted file's lines as removed", () => {
    const driver = codexDriver(context("ask"));
    driver.read(
      line({
        method: "item/fileChange/patchUpdated",
        params: {
          threadId: "t",
          turnId: "u",
          itemId: "call_u",
          changes: [
            { path: "/w/a.ts", kind: { type: "update", move_path: "/w/b.ts" }, diff: "@@\n-x\n+y\n" },
          ],
        },
      }),
    );
    const moved = askOf(driver, {
      ...PATCH_REQUEST,
      id: 7,
      params: { ...PATCH_REQUEST.params, itemId: "call_u" },
    });
    expect(moved.request).toMatchObject({
      path: "/w/a.ts",
      diff: "@@\n-x\n+y\n",
      summary: "Move /w/a.ts to /w/b.ts",
    });
    driver.read(line(DELETE_STARTED));
    const deleted = askOf(driver, DELETE_REQUEST);
    expect(deleted.request).toEqual({
      kind: "edit",
      path: `${WORKSPACE}/gone.txt`,
      diff: "-a\n-b",
      cwd: WORKSPACE,
      summary: `Delete ${WORKSPACE}/gone.txt`,
    });
  });

  it("still asks about a change whose files it never saw (or forgot once the item completed), as an edit", () => {
    const driver = codexDriver(context("ask"));
    driver.read(line(PATCH_STARTED));
    driver.read(
      line({
        method: "item/completed",
        params: { ...PATCH_STARTED.params, item: { ...PATCH_STARTED.params.item, status: "completed" } },
      }),
    );
    expect(askOf(driver, PATCH_REQUEST).request).toEqual({
      kind: "edit",
      path: WORKSPACE,
      cwd: WORKSPACE,
      summary: `Change files under ${WORKSPACE}`,
    });
    const rooted = askOf(driver, { ...PATCH_REQUEST, params: { itemId: "nope", grantRoot: "/srv/data" } });
    expect(rooted.request).toMatchObject({ kind: "edit", path: "/srv/data" });
  });

  it("clips a huge diff to 60 000 characters", () => {
    const driver = codexDriver(context("ask"));
    driver.read(
      line({
        method: "item/started",
        params: {
          item: {
            type: "fileChange",
            id: "big",
            status: "inProgress",
            changes: [{ path: "/w/big", kind: { type: "add" }, diff: "y".repeat(100_000) }],
          },
        },
      }),
    );
    const ask = askOf(driver, { ...PATCH_REQUEST, params: { itemId: "big" } });
    expect(ask.request.diff).toHaveLength(60_000);
  });

  it("maps v1's applyPatchApproval with its files and its own decisions", () => {
    const v1 = {
      id: 8,
      method: "applyPatchApproval",
      params: {
        conversationId: "c",
        callId: "call_p",
        fileChanges: { "/w/new.md": { type: "add", content: "# New\n" } },
        reason: null,
        grantRoot: null,
      },
    };
    const ask = askOf(codexDriver(context("ask")), v1);
    expect(ask.request).toEqual({
      kind: "edit",
      path: "/w/new.md",
      diff: "# New\n",
      cwd: WORKSPACE,
      summary: "Create /w/new.md",
    });
    expect(ask.answer(ALLOW)).toEqual(['{"id":8,"result":{"decision":"approved"}}']);
    expect(parsed(answerOf(v1, DENY))).toEqual([
      { id: 8, result: { decision: { denied: { rejection: "Not that one." } } } },
    ]);
  });
});

describe("codex in ask mode: MCP tools", () => {
  it("asks about another server's tool, named as the model knows it, with its arguments", () => {
    const ask = askOf(codexDriver(context("ask")), MCP_OTHER);
    expect(ask.request).toEqual({
      kind: "mcp_tool",
      tool: "mcp__other__write_note",
      arguments: { text: "from the model" },
      cwd: WORKSPACE,
      summary: "Call write_note (MCP server other)",
    });
    expect(ask.answer(ALLOW)).toEqual(['{"id":4,"result":{"action":"accept","content":{},"_meta":null}}']);
    expect(answerOf(MCP_OTHER, DENY)).toEqual([
      '{"id":4,"result":{"action":"decline","content":null,"_meta":null}}',
    ]);
  });

  it("allows Oubliette's own server's tools at once (the session gates them), saying so", () => {
    const out = codexDriver(context("ask")).read(line(MCP_OWN));
    expect(out.asks).toBeUndefined();
    expect(out.write).toEqual(['{"id":5,"result":{"action":"accept","content":{},"_meta":null}}']);
    expect(out.events).toEqual([
      {
        type: "system",
        subtype: "auto_answer",
        message: expect.stringContaining("oubliette"),
        data: { method: "mcpServer/elicitation/request", granted: true },
      },
    ]);
  });

  it("reads the tool from Codex's question when _meta does not name it; asks in Codex's words when neither does", () => {
    const driver = codexDriver(context("ask"));
    const { tool_name: _, ...meta } = MCP_OTHER.params._meta;
    expect(askOf(driver, { ...MCP_OTHER, params: { ...MCP_OTHER.params, _meta: meta } }).request.tool).toBe(
      "mcp__other__write_note",
    );
    const vague = askOf(driver, {
      ...MCP_OTHER,
      params: {
        serverName: "other",
        message: "Allow this?",
        _meta: { codex_approval_kind: "mcp_tool_call" },
      },
    });
    expect(vague.request).toEqual({
      kind: "shell",
      command: "Allow this?",
      cwd: WORKSPACE,
      summary: "Allow this?",
    });
  });

  it("handles Codex's fallback question for an MCP tool call (item/tool/requestUserInput)", () => {
    const driver = codexDriver(context("ask"));
    const question = (server: string, id: number) => ({
      id,
      method: "item/tool/requestUserInput",
      params: {
        threadId: "t",
        turnId: "u",
        itemId: "call_9",
        questions: [
          {
            id: "mcp_tool_call_approval_call_9",
            header: "Approve app tool call?",
            question: `Allow the ${server} MCP server to run tool "write_note"?`,
            isOther: false,
            isSecret: false,
            options: [
              { label: "Allow", description: "" },
              { label: "Cancel", description: "" },
            ],
          },
        ],
      },
    });
    const ask = askOf(driver, question("other", 10));
    expect(ask.request).toMatchObject({ kind: "mcp_tool", tool: "mcp__other__write_note" });
    expect(parsed(ask.answer(ALLOW))).toEqual([
      { id: 10, result: { answers: { mcp_tool_call_approval_call_9: { answers: ["Allow"] } } } },
    ]);
    expect(parsed(answerOf(question("other", 10), DENY))).toEqual([
      { id: 10, result: { answers: { mcp_tool_call_approval_call_9: { answers: ["Cancel"] } } } },
    ]);
    const own = driver.read(line(question("oubliette", 11)));
    expect(own.asks).toBeUndefined();
    expect(parsed(own.write)).toEqual([
      { id: 11, result: { answers: { mcp_tool_call_approval_call_9: { answers: ["Allow"] } } } },
    ]);
  });
});

describe("codex in ask mode: other requests", () => {
  it("asks about more sandbox permissions as a shell request; allow grants them for the turn, deny none", () => {
    const permissions = { network: { enabled: true }, fileSystem: null };
    const request = {
      id: 12,
      method: "item/permissions/requestApproval",
      params: {
        threadId: "t",
        turnId: "u",
        itemId: "i",
        cwd: WORKSPACE,
        reason: "fetch a package",
        permissions,
      },
    };
    const ask = askOf(codexDriver(context("ask")), request);
    expect(ask.request).toMatchObject({ kind: "shell", summary: "fetch a package" });
    expect(ask.request.command).toContain('"network":{"enabled":true}');
    expect(parsed(ask.answer(ALLOW))).toEqual([{ id: 12, result: { permissions, scope: "turn" } }]);
    expect(parsed(answerOf(request, DENY))).toEqual([{ id: 12, result: { permissions: {}, scope: "turn" } }]);
  });

  it("answers what is no permission question as before: a form declined, a question left empty, an unknown refused", () => {
    const driver = codexDriver(context("ask"));
    const form = driver.read(
      line({
        id: 13,
        method: "mcpServer/elicitation/request",
        params: { serverName: "other", mode: "form", message: "Name?" },
      }),
    );
    expect(form.asks).toBeUndefined();
    expect(parsed(form.write)).toEqual([
      { id: 13, result: { action: "decline", content: null, _meta: null } },
    ]);
    const input = driver.read(
      line({
        id: 14,
        method: "item/tool/requestUserInput",
        params: { questions: [{ id: "q", question: "Which?" }] },
      }),
    );
    expect(parsed(input.write)).toEqual([{ id: 14, result: { answers: {} } }]);
    const unknown = driver.read(line({ id: 15, method: "item/tool/call", params: {} }));
    expect(parsed(unknown.write)).toEqual([{ id: 15, error: { code: -32601, message: expect.any(String) } }]);
  });
});

describe("codex command lines", () => {
  it("joins argv as a shell line, quoting only what needs it", () => {
    expect(shellJoin(["ls", "-la", "a b", "", "it's"])).toBe(`ls -la 'a b' '' 'it'"'"'s'`);
  });

  it("splits a POSIX line, or refuses what a shell would interpret", () => {
    expect(shellSplit(`/bin/bash -lc 'echo six > six.txt'`)).toEqual([
      "/bin/bash",
      "-lc",
      "echo six > six.txt",
    ]);
    expect(shellSplit(`bash -c "say \\"hi\\"" x\\ y`)).toEqual(["bash", "-c", 'say "hi"', "x y"]);
    expect(shellSplit("echo 'open")).toBeUndefined();
    expect(shellSplit("bash -lc x;rm")).toBeUndefined();
    expect(shellSplit('bash -lc "$(id)"')).toBeUndefined();
  });

  it("asks about the script of a `<shell> -lc <script>` wrapper, else the whole line", () => {
    expect(commandLine("/bin/bash -lc ls")).toBe("ls");
    expect(commandLine(`/usr/bin/zsh -c 'cd a && make'`)).toBe("cd a && make");
    expect(commandLine("/bin/bash -lc 'a' ; rm -rf x")).toBe("/bin/bash -lc 'a' ; rm -rf x");
    expect(commandLine("bash -lc a b")).toBe("bash -lc a b");
    expect(commandLine("python -c 'print(1)'")).toBe("python -c 'print(1)'");
    expect(commandLine(["sh", "-c", "echo hi"])).toBe("echo hi");
    expect(commandLine(["sh", "-x", "script.sh"])).toBe("sh -x script.sh");
  });
});
