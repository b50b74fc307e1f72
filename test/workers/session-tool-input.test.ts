/**
 * What the session tool refuses before anything reaches a session or a host: caller tool
 * declarations whose inputSchema is not a JSON Schema or whose entries carry keys we do not know,
 * input over the size budget (protocol/limits.ts, counted in encoded bytes) and JSON nested past
 * the depth limit.
 */

import { afterEach, describe, expect, it } from "vitest";
import { Limits } from "../../protocol/limits.js";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { disconnectAll } from "./support/fake-host.js";
import { callTool, initialize, mcpFetch, rpc, rpcBody } from "./support/mcp.js";
import { createProject } from "./support/projects.js";
import { hostedSession } from "./support/session.js";
import { ADMIN } from "./support/tokens.js";

afterEach(disconnectAll);

const BROKEN_SCHEMA = { type: "object", properties: "oops" };

describe("caller tool inputSchema", () => {
  it("refuses a spawn whose inputSchema is not a valid JSON Schema, naming the problem", async () => {
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "spawn",
      project_id: await createProject(),
      caller_id: "ant",
      caller_tools: [{ name: "fine" }, { name: "broken", inputSchema: BROKEN_SCHEMA }],
    });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "invalid_arguments" } },
    });
    const text = result.content[0]?.text ?? "";
    expect(text).toContain("caller_tools[1] (broken)");
    expect(text).toContain("not a valid JSON Schema");
    expect(text).toContain("properties");
  });

  it("refuses a re-declaration with a broken inputSchema and keeps the tools declared before", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      caller_id: "ant",
      caller_tools: [{ name: "broken", inputSchema: BROKEN_SCHEMA }],
    });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "invalid_arguments" } },
    });
    expect(result.content[0]?.text).toContain("properties");
    expect(await s.stub.getInfo(ADMIN, null)).toMatchObject({ value: { caller_tools: ["send_response"] } });
    await s.tunnel.barrier();
    expect(s.tunnel.socket.seen((f) => f.kind === "notification")).toEqual([]);
  });

  it("accepts a valid nested schema", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const inputSchema = {
      type: "object",
      properties: {
        text: { type: "string", maxLength: 100 },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["text"],
    };
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      caller_id: "ant",
      caller_tools: [{ name: "send_response", inputSchema }],
    });
    expect(result.isError).toBeUndefined();
    expect((await s.tunnel.nextConfig()).tools).toEqual([{ name: "send_response", inputSchema }]);
  });
});

describe("unknown keys", () => {
  it("refuses a caller tool entry with a key we do not know, naming it (not dropping it)", async () => {
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "spawn",
      project_id: await createProject(),
      caller_id: "ant",
      caller_tools: [{ name: "fine" }, { name: "typo", descripton: "Sends a reply." }],
    });
    expect(result.structuredContent).toEqual({
      error: {
        code: "invalid_arguments",
        message: 'Invalid arguments for session: caller_tools.1: Unrecognized key: "descripton"',
      },
    });
  });

  it("refuses a key in context other than caller_id and caller_tools, and inside its tool entries", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const message = (context: Record<string, unknown>) =>
      callTool(mcp, "session", { action: "message", session_id: s.sessionId, context });
    const stray = await message({ caller_id: "ant", caller_tool: [{ name: "x" }] });
    expect(stray.structuredContent).toMatchObject({ error: { code: "invalid_arguments" } });
    expect(stray.content[0]?.text).toContain('context: Unrecognized key: "caller_tool"');
    const nested = await message({ caller_id: "ant", caller_tools: [{ name: "x", input_schema: {} }] });
    expect(nested.structuredContent).toMatchObject({ error: { code: "invalid_arguments" } });
    expect(nested.content[0]?.text).toContain('context.caller_tools.0: Unrecognized key: "input_schema"');
    await s.tunnel.barrier();
    expect(s.tunnel.socket.seen((f) => f.kind === "notification")).toEqual([]);
  });

  it("keeps an inputSchema open: any JSON Schema keywords, ours or the caller's, pass through", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const inputSchema = {
      type: "object",
      $schema: "https://json-schema.org/draft/2020-12/schema",
      title: "Reply",
      properties: { text: { type: "string", examples: ["hi"], "x-widget": "textarea" } },
      additionalProperties: false,
      "x-vendor": { anything: [1, 2] },
    };
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      caller_id: "ant",
      caller_tools: [{ name: "send_response", title: "Send", description: "Replies.", inputSchema }],
    });
    expect(result.isError).toBeUndefined();
    expect((await s.tunnel.nextConfig()).tools).toEqual([
      { name: "send_response", title: "Send", description: "Replies.", inputSchema },
    ]);
  });
});

describe("the size budget", () => {
  it("refuses a declaration over 256 KiB encoded with too_large naming the limit", async () => {
    const mcp = await initialize();
    // 40 tools, each within the per-field limits; together about 320 KB.
    const tools = Array.from({ length: 40 }, (_, i) => ({
      name: `tool_${i}`,
      description: "d".repeat(8000),
    }));
    const result = await callTool(mcp, "session", {
      action: "spawn",
      project_id: await createProject(),
      caller_id: "ant",
      caller_tools: tools,
    });
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "too_large" } } });
    expect(result.content[0]?.text).toContain(String(Limits.declarationBytes));
  });

  it("counts a prompt's escapes: 200,000 x U+0001 is 1.2 MB encoded, over the 256 KiB message budget", async () => {
    const mcp = await initialize();
    const prompt = "\u0001".repeat(200_000);
    const result = await callTool(mcp, "session", {
      action: "spawn",
      project_id: await createProject(),
      prompt,
    });
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "too_large" } } });
    const text = result.content[0]?.text ?? "";
    expect(text).toContain("1200002 bytes");
    expect(text).toContain(String(Limits.messageBytes));
  });

  it("refuses a message over the budget the same way", async () => {
    const s = await hostedSession();
    const mcp = await initialize();
    const result = await callTool(mcp, "session", {
      action: "message",
      session_id: s.sessionId,
      message: "\u0001".repeat(200_000),
    });
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "too_large" } } });
    await s.tunnel.barrier();
    expect(s.tunnel.messages()).toEqual([]);
  });
});

describe("nesting", () => {
  it("answers tools/call arguments nested 100,000 deep with a clear JSON-RPC error", async () => {
    const mcp = await initialize();
    const depth = 100_000;
    const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session","arguments":{"action":"spawn","context":{"x":${nested}}}}}`;
    const res = await mcpFetch({ body, session: mcp, headers: { "mcp-protocol-version": "2025-11-25" } });
    expect(res.status).toBe(400);
    const answer = await rpcBody(res);
    expect(answer.error?.code).toBe(RpcErrorCode.InvalidRequest);
    expect(answer.error?.message).toContain(`nested deeper than ${Limits.jsonDepth} levels`);
    // The session is fine.
    expect((await rpc(mcp, "ping")).result).toEqual({});
  });
});
