/**
 * The Factory Droid adapter when the session asks: the handshake (`autonomyLevel: "off"`), each
 * `droid.request_permission` question (docs/approval-hooks.md §5, the shapes of Droid 0.215.0's
 * own schema) as one PermissionAsk, the exact response lines that answer it, a question Droid
 * withdraws; `auto` stays as it was.
 */
import { describe, expect, it } from "vitest";
import type { AgentDriver, DriverOutput, PermissionAsk } from "../../container-client/src/agents/driver.js";
import { droidDriver } from "../../container-client/src/agents/droid.js";
import {
  type ApprovalDecision,
  ApprovalRequestSchema,
  DEFAULT_DENIAL_MESSAGE,
} from "../../protocol/approvals.js";
import { launchContext } from "../support/agent-streams.js";

const context = launchContext({ runtime: "droid", command: ["/opt/agents/droid/droid"] });
const ASK = { ...context, approvals: "ask" as const };
const allow: ApprovalDecision = { decision: "allow", scope: "once", by: "answer" };
const allowSession: ApprovalDecision = { decision: "allow", scope: "session", by: "answer" };
const deny = (message?: string): ApprovalDecision => ({
  decision: "deny",
  scope: "once",
  by: "answer",
  ...(message !== undefined ? { message } : {}),
});

/** Droid 0.215.0's options of an Execute question. */
const OPTIONS = [
  { label: "Yes, allow", value: "proceed_once" },
  { label: "Yes, and always allow medium impact commands", value: "proceed_always" },
  { label: "No, cancel", value: "cancel" },
];

function question(id: string, toolUses: unknown[], options: unknown[] = OPTIONS): string {
  return JSON.stringify({
    type: "request",
    jsonrpc: "2.0",
    factoryApiVersion: "1.0.0",
    factoryProtocolVersion: "1.206.0",
    method: "droid.request_permission",
    id,
    params: { toolUses, options },
  });
}

const EXECUTE = {
  toolUse: {
    type: "tool_use",
    id: "toolu_01",
    name: "Execute",
    input: { command: "npm test", riskLevel: "medium", riskLevelReason: "Runs the project's tests" },
  },
  confirmationType: "exec",
  details: {
    type: "exec",
    fullCommand: "npm test",
    command: "npm",
    extractedCommands: ["npm"],
    impactLevel: "medium",
    riskLevelReason: "Runs the project's tests",
  },
};
const EDIT = {
  toolUse: {
    type: "tool_use",
    id: "toolu_02",
    name: "Edit",
    input: { file_path: "/workspace/default/src/a.ts", old_str: "const a = 1;", new_str: "const a = 2;" },
  },
  confirmationType: "edit",
  details: {
    type: "edit",
    filePath: "/workspace/default/src/a.ts",
    fileName: "a.ts",
    oldContent: "// a\nconst a = 1;\n",
    newContent: "// a\nconst a = 2;\n",
  },
};
const CREATE = {
  toolUse: {
    type: "tool_use",
    id: "toolu_03",
    name: "Create",
    input: { file_path: "/workspace/default/notes.md", content: "# Notes\n" },
  },
  confirmationType: "create",
  details: {
    type: "create",
    filePath: "/workspace/default/notes.md",
    fileName: "notes.md",
    content: "# Notes\n",
  },
};
const PATCH_TEXT =
  "*** Begin Patch\n*** Update File: src/b.ts\n@@\n-export const b = 1;\n+export const b = 3;\n*** Add File: src/c.ts\n+export const c = 0;\n*** End Patch";
const APPLY_PATCH = {
  toolUse: { type: "tool_use", id: "toolu_04", name: "ApplyPatch", input: { input: PATCH_TEXT } },
  confirmationType: "apply_patch",
  details: {
    type: "apply_patch",
    filePath: "/workspace/default/src/b.ts",
    fileName: "b.ts",
    patchContent: PATCH_TEXT,
    oldContent: "export const b = 1;\n",
    newContent: "export const b = 3;\n",
    files: [
      { filePath: "/workspace/default/src/b.ts", fileName: "b.ts", operation: "update" },
      { filePath: "/workspace/default/src/c.ts", fileName: "c.ts", operation: "create" },
    ],
  },
};
const mcpUse = (server: string, tool: string, input: Record<string, unknown>, id = "toolu_05") => ({
  toolUse: { type: "tool_use", id, name: `${server}___${tool}`, input },
  confirmationType: "mcp_tool",
  details: {
    type: "mcp_tool",
    toolName: `${server}___${tool}`,
    impactLevel: "high",
    serverName: server,
    actualToolName: tool,
  },
});

/** The one ask a line makes (and nothing written or said besides). */
function onlyAsk(out: DriverOutput): PermissionAsk {
  expect(out.write).toEqual([]);
  expect(out.events).toEqual([]);
  expect(out.asks).toHaveLength(1);
  const ask = out.asks?.[0] as PermissionAsk;
  expect(ApprovalRequestSchema.safeParse(ask.request).success, "a valid ApprovalRequest").toBe(true);
  return ask;
}

function askOf(line: string, driver: AgentDriver = droidDriver(ASK)): PermissionAsk {
  return onlyAsk(driver.read(line));
}

function parsed(lines: string[]): unknown[] {
  return lines.map((l) => JSON.parse(l) as unknown);
}

const response = (id: string, body: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: "2.0", type: "response", factoryApiVersion: "1.0.0", id, ...body });
const notification = (n: Record<string, unknown>) =>
  JSON.stringify({
    jsonrpc: "2.0",
    type: "notification",
    factoryApiVersion: "1.0.0",
    method: "droid.session_notification",
    params: { notification: n },
  });

describe("Factory Droid adapter, approvals ask: the launch", () => {
  it("initialises the session at autonomy off, the rest as in auto", () => {
    const [askInit] = parsed(droidDriver(ASK).start()) as { params: Record<string, unknown> }[];
    const [autoInit] = parsed(droidDriver(context).start()) as { params: Record<string, unknown> }[];
    expect(askInit?.params.autonomyLevel).toBe("off");
    expect(autoInit?.params.autonomyLevel).toBe("high");
    expect({ ...askInit, params: { ...askInit?.params, autonomyLevel: "high" } }).toEqual(autoInit);
  });

  it("launches the same process and environment as in auto; its settings let no command by unasked", () => {
    const ask = droidDriver(ASK).launch();
    const auto = droidDriver(context).launch();
    expect({ ...ask, files: [], hazards: [] }).toEqual({ ...auto, files: [], hazards: [] });
    const settings = (launch: typeof ask) =>
      JSON.parse(launch.files[0]?.content ?? "{}") as Record<string, unknown>;
    expect(settings(ask)).toEqual({ ...settings(auto), commandAllowlist: [] });
    expect(settings(auto)).not.toHaveProperty("commandAllowlist");
  });

  it("sets a loaded session to autonomy off before the messages that waited for it", () => {
    const driver = droidDriver({ ...ASK, resume: "droid-s1" });
    const [load] = parsed(driver.start()) as { id: string; method: string }[];
    expect(load?.method).toBe("droid.load_session");
    driver.send(3, "after the crash");
    const loaded = driver.read(response(String(load?.id), { result: {} }));
    expect(parsed(loaded.write)).toEqual([
      expect.objectContaining({
        type: "request",
        method: "droid.update_session_settings",
        params: { autonomyLevel: "off" },
      }),
      expect.objectContaining({ method: "droid.add_user_message", params: { text: "after the crash" } }),
    ]);
    // Its answer says nothing.
    const settings = (parsed(loaded.write)[0] as { id: string }).id;
    expect(driver.read(response(settings, { result: {} }))).toEqual({ events: [], write: [] });
  });

  it("loads a session in auto as before (no settings sent)", () => {
    const driver = droidDriver({ ...context, resume: "droid-s1" });
    const [load] = parsed(driver.start()) as { id: string }[];
    driver.send(3, "after the crash");
    const loaded = driver.read(response(String(load?.id), { result: {} }));
    expect(parsed(loaded.write)).toEqual([
      expect.objectContaining({ method: "droid.add_user_message", params: { text: "after the crash" } }),
    ]);
  });
});

describe("Factory Droid adapter, approvals auto: unchanged", () => {
  for (const approvals of [undefined, "auto" as const]) {
    it(`refuses a permission question at once, as before (approvals ${approvals ?? "absent"})`, () => {
      const out = droidDriver({ ...context, approvals }).read(question("q-auto", [EXECUTE]));
      expect(out.asks).toBeUndefined();
      expect(out.events).toEqual([
        { type: "system", subtype: "unanswered_request", message: "droid asked droid.request_permission" },
      ]);
      expect(out.write).toEqual([
        '{"jsonrpc":"2.0","factoryApiVersion":"1.0.0","type":"response","id":"q-auto",' +
          '"error":{"code":-32601,"message":"not supported by this client"}}',
      ]);
    });
  }

  it("says nothing of permission_resolved, as before", () => {
    expect(
      droidDriver(context).read(
        notification({
          type: "permission_resolved",
          requestId: "q",
          toolUseIds: [],
          selectedOption: "cancel",
        }),
      ),
    ).toEqual({ events: [], write: [] });
  });
});

describe("Factory Droid adapter, approvals ask: questions and answers", () => {
  it("asks about a command: the exact command line, the workspace", () => {
    expect(askOf(question("q1", [EXECUTE])).request).toEqual({
      kind: "shell",
      command: "npm test",
      cwd: "/workspace/default",
      summary: "Run: npm test",
    });
  });

  it("answers allow with proceed_once, whatever the scope (never Droid's own 'always')", () => {
    const expected =
      '{"jsonrpc":"2.0","factoryApiVersion":"1.0.0","type":"response","id":"q1","result":{"selectedOption":"proceed_once"}}';
    expect(askOf(question("q1", [EXECUTE])).answer(allow)).toEqual([expected]);
    expect(askOf(question("q1", [EXECUTE])).answer(allowSession)).toEqual([expected]);
  });

  it("answers deny with an error response carrying the message (Droid hands it to the model; nothing runs)", () => {
    expect(askOf(question("q1", [EXECUTE])).answer(deny("Not on this branch; use the unit tests."))).toEqual([
      '{"jsonrpc":"2.0","factoryApiVersion":"1.0.0","type":"response","id":"q1",' +
        '"error":{"code":-32600,"message":"Not on this branch; use the unit tests."}}',
    ]);
  });

  it("answers a deny without a message with the default one", () => {
    for (const decision of [deny(), deny("  "), { ...deny(), by: "timeout" as const }]) {
      expect(parsed(askOf(question("q1", [EXECUTE])).answer(decision))).toEqual([
        {
          jsonrpc: "2.0",
          factoryApiVersion: "1.0.0",
          type: "response",
          id: "q1",
          error: { code: -32600, message: DEFAULT_DENIAL_MESSAGE },
        },
      ]);
    }
  });

  it("answers a question once: a second answer is no line", () => {
    const ask = askOf(question("q1", [EXECUTE]));
    expect(ask.answer(allow)).toHaveLength(1);
    expect(ask.answer(deny("late"))).toEqual([]);
  });

  it("asks about an Edit: the file and the change", () => {
    expect(askOf(question("q2", [EDIT])).request).toEqual({
      kind: "edit",
      path: "/workspace/default/src/a.ts",
      diff: [
        "--- /workspace/default/src/a.ts",
        "+++ /workspace/default/src/a.ts",
        "-const a = 1;",
        "+const a = 2;",
      ].join("\n"),
      cwd: "/workspace/default",
      summary: "Edit /workspace/default/src/a.ts",
    });
  });

  it("asks about a new file: its path and content", () => {
    expect(askOf(question("q3", [CREATE])).request).toEqual({
      kind: "edit",
      path: "/workspace/default/notes.md",
      diff: "# Notes\n",
      cwd: "/workspace/default",
      summary: "Create /workspace/default/notes.md",
    });
  });

  it("asks about a patch: its first file, the patch, every file named", () => {
    expect(askOf(question("q4", [APPLY_PATCH])).request).toEqual({
      kind: "edit",
      path: "/workspace/default/src/b.ts",
      diff: PATCH_TEXT,
      cwd: "/workspace/default",
      summary: "Patch /workspace/default/src/b.ts, /workspace/default/src/c.ts",
    });
  });

  it("asks about another MCP server's tool under the name the model sees, with its arguments", () => {
    expect(askOf(question("q5", [mcpUse("echo", "echo", { text: "ping from fake model" })])).request).toEqual(
      {
        kind: "mcp_tool",
        tool: "echo___echo",
        arguments: { text: "ping from fake model" },
        cwd: "/workspace/default",
        summary: "Call echo___echo",
      },
    );
  });

  it("allows our own server's tool at once, without an ask", () => {
    const out = droidDriver(ASK).read(question("q6", [mcpUse("oubliette", "send_message", { text: "hi" })]));
    expect(out.asks).toBeUndefined();
    expect(out.events).toEqual([
      {
        type: "system",
        subtype: "auto_answer",
        message: "allowed oubliette___send_message (the session gates its own tools)",
        data: { method: "droid.request_permission", granted: true },
      },
    ]);
    expect(out.write).toEqual([
      '{"jsonrpc":"2.0","factoryApiVersion":"1.0.0","type":"response","id":"q6","result":{"selectedOption":"proceed_once"}}',
    ]);
  });

  it("knows our own server by the context's name", () => {
    const driver = droidDriver({ ...ASK, mcpServer: { ...ASK.mcpServer, name: "ours" } });
    expect(driver.read(question("q7", [mcpUse("ours", "x", {})])).asks).toBeUndefined();
    expect(askOf(question("q8", [mcpUse("oubliette", "x", {})]), driver).request.kind).toBe("mcp_tool");
  });

  it("asks once about several tool uses: the riskiest's request, a summary naming them all", () => {
    const ask = askOf(
      question("q9", [EDIT, mcpUse("oubliette", "send_message", { text: "hi" }, "toolu_06"), EXECUTE]),
    );
    expect(ask.request).toEqual({
      kind: "shell",
      command: "npm test",
      cwd: "/workspace/default",
      summary: "Edit /workspace/default/src/a.ts; Call oubliette___send_message; Run: npm test",
    });
    expect(parsed(ask.answer(allow))).toEqual([
      expect.objectContaining({ id: "q9", result: { selectedOption: "proceed_once" } }),
    ]);
  });

  it("prefers an edit over an MCP call among several", () => {
    expect(askOf(question("q10", [mcpUse("echo", "echo", {}), CREATE])).request).toMatchObject({
      kind: "edit",
      path: "/workspace/default/notes.md",
      summary: "Call echo___echo; Create /workspace/default/notes.md",
    });
  });

  it("asks about a fetched URL as a read, a web search as the line Droid words it", () => {
    const fetch = {
      toolUse: { type: "tool_use", id: "t", name: "FetchUrl", input: { url: "https://example.com/x" } },
      confirmationType: "exec",
      details: {
        type: "exec",
        fullCommand: "Fetch URL: https://example.com/x",
        command: "Fetch URL: https://example.com/x",
        extractedCommands: [],
        impactLevel: "medium",
      },
    };
    expect(askOf(question("q11", [fetch])).request).toEqual({
      kind: "read",
      path: "https://example.com/x",
      cwd: "/workspace/default",
      summary: "Fetch https://example.com/x",
    });
    const search = {
      toolUse: { type: "tool_use", id: "t", name: "WebSearch", input: { query: "zod 4" } },
      confirmationType: "exec",
      details: { type: "exec", fullCommand: "Web Search: zod 4", command: "Web Search: zod 4" },
    };
    expect(askOf(question("q12", [search])).request).toMatchObject({
      kind: "shell",
      command: "Web Search: zod 4",
      summary: "Web Search: zod 4",
    });
  });

  it("asks about a sandbox's refused read as a read of its target", () => {
    const violation = {
      toolUse: { type: "tool_use", id: "t", name: "Read", input: { file_path: "/etc/shadow" } },
      confirmationType: "sandbox_violation",
      details: {
        type: "sandbox_violation",
        violatingToolName: "Read",
        target: "/etc/shadow",
        operationType: "read",
        violationType: "filesystem-read",
        reason: "outside the allowed paths",
        isOrgDeny: false,
      },
    };
    expect(askOf(question("q13", [violation])).request).toEqual({
      kind: "read",
      path: "/etc/shadow",
      cwd: "/workspace/default",
      summary: "Read: outside the allowed paths",
    });
  });

  it("still asks what it cannot map, as the tool and its input", () => {
    const spec = {
      toolUse: { type: "tool_use", id: "t", name: "ExitSpecMode", input: { plan: "do it" } },
      confirmationType: "exit_spec_mode",
      details: { type: "exit_spec_mode", plan: "do it" },
    };
    expect(askOf(question("q14", [spec])).request).toEqual({
      kind: "shell",
      command: 'ExitSpecMode {"plan":"do it"}',
      cwd: "/workspace/default",
      summary: "Use ExitSpecMode",
    });
    const odd = askOf(question("q15", [{ nonsense: true }, EXECUTE]));
    expect(odd.request).toMatchObject({ kind: "shell" });
    const broken = askOf(
      JSON.stringify({ type: "request", method: "droid.request_permission", id: "q16", params: "?" }),
    );
    expect(broken.request.kind).toBe("shell");
    expect(parsed(broken.answer(allow))).toEqual([
      expect.objectContaining({ id: "q16", result: { selectedOption: "proceed_once" } }),
    ]);
    const none = askOf(question("q17", []));
    expect(none.request).toMatchObject({ kind: "shell", command: "droid.request_permission" });
  });

  it("says so when a question has no id to answer", () => {
    const out = droidDriver(ASK).read(
      JSON.stringify({
        type: "request",
        method: "droid.request_permission",
        params: { toolUses: [EXECUTE] },
      }),
    );
    expect(out.asks).toBeUndefined();
    expect(out.events).toEqual([expect.objectContaining({ type: "error" })]);
  });

  it("refuses Droid's other requests as before", () => {
    const out = droidDriver(ASK).read(
      JSON.stringify({ type: "request", method: "droid.ask_user", id: "u1", params: {} }),
    );
    expect(out.asks).toBeUndefined();
    expect(parsed(out.write)).toEqual([expect.objectContaining({ id: "u1", error: expect.anything() })]);
  });
});

describe("Factory Droid adapter, approvals ask: withdrawn questions", () => {
  const resolved = (requestId: string, selectedOption = "cancel") =>
    notification({ type: "permission_resolved", requestId, toolUseIds: [], selectedOption });

  it("withdraws a question Droid resolved without our answer (an interrupt), and answers it with no line", () => {
    const driver = droidDriver(ASK);
    const ask = askOf(question("q1", [EXECUTE]), driver);
    const out = driver.read(resolved("q1"));
    expect(out).toEqual({ events: [], write: [], withdrawn: [ask] });
    expect(ask.answer(allow)).toEqual([]);
    expect(driver.read(resolved("q1"))).toEqual({ events: [], write: [] });
  });

  it("withdraws nothing once it answered (Droid then says it resolved the question)", () => {
    const driver = droidDriver(ASK);
    const ask = askOf(question("q1", [EXECUTE]), driver);
    expect(ask.answer(allow)).toHaveLength(1);
    expect(driver.read(resolved("q1", "proceed_once"))).toEqual({ events: [], write: [] });
  });

  it("withdraws only the question resolved", () => {
    const driver = droidDriver(ASK);
    const first = askOf(question("q1", [EXECUTE]), driver);
    const second = askOf(question("q2", [EDIT]), driver);
    expect(driver.read(resolved("q2")).withdrawn).toEqual([second]);
    expect(first.answer(allow)).toHaveLength(1);
  });
});
