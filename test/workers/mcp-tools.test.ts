import { describe, expect, it } from "vitest";
import { z } from "zod";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { callTool, initialize, rpc } from "./support/mcp.js";
import { createProject } from "./support/projects.js";
import { newSessionId } from "./support/session.js";
import { READER_TOKEN } from "./support/tokens.js";

const ListingSchema = z.object({
  tools: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      inputSchema: z.object({
        type: z.literal("object"),
        properties: z.record(z.string(), z.record(z.string(), z.unknown())),
        required: z.array(z.string()).optional(),
      }),
    }),
  ),
});

describe("tools/list", () => {
  it("lists the session tool with its action enum and caller_tool_response", async () => {
    const session = await initialize();
    const { tools } = ListingSchema.parse((await rpc(session, "tools/list")).result);
    const byName = new Map(tools.map((t) => [t.name, t]));
    const sessionTool = byName.get("session");
    expect(sessionTool?.inputSchema.type).toBe("object");
    expect(sessionTool?.inputSchema.properties.action).toMatchObject({
      type: "string",
      enum: ["spawn", "message", "interrupt", "get", "list", "events", "pending", "end", "cleanup"],
    });
    expect(sessionTool?.inputSchema.required).toEqual(["action"]);
    expect(Object.keys(sessionTool?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining([
        "session_id",
        "caller_id",
        "caller_tools",
        "caller_presence",
        "since_index",
        "wait_seconds",
        "prompt",
      ]),
    );
    const response = byName.get("caller_tool_response");
    expect(response?.inputSchema.type).toBe("object");
    expect(response?.inputSchema.required).toEqual(expect.arrayContaining(["session_id", "request_id"]));
  });
});

describe("tools/call errors", () => {
  it("answers an unknown tool with JSON-RPC -32602", async () => {
    const session = await initialize();
    const res = await rpc(session, "tools/call", { name: "no_such_tool", arguments: {} });
    expect(res.error?.code).toBe(McpErrorCode.invalidParams);
    expect(res.error?.message).toContain("no_such_tool");
  });

  it("answers tools/call without a tool name with -32602", async () => {
    const session = await initialize();
    const res = await rpc(session, "tools/call", { arguments: {} });
    expect(res.error?.code).toBe(McpErrorCode.invalidParams);
  });

  it("answers invalid arguments with an isError result naming the field", async () => {
    const session = await initialize();
    const result = await callTool(session, "session", { action: "get", session_id: "nope" });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("session_id");
    expect(result.structuredContent).toMatchObject({ error: { code: "invalid_arguments" } });
  });

  it("names an unknown action as invalid", async () => {
    const session = await initialize();
    const result = await callTool(session, "session", { action: "explode" });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("action");
  });

  it("refuses arguments the tool does not define", async () => {
    const session = await initialize();
    const result = await callTool(session, "session", {
      action: "get",
      session_id: newSessionId(),
      sneaky: true,
    });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("sneaky");
  });

  it("refuses a write action to a read-only token", async () => {
    const session = await initialize(READER_TOKEN);
    const result = await callTool(
      session,
      "session",
      { action: "spawn", project_id: await createProject(), prompt: "hi" },
      READER_TOKEN,
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: "forbidden" } });
  });

  it("reports a session that does not exist as not_found", async () => {
    const session = await initialize();
    const result = await callTool(session, "session", { action: "get", session_id: newSessionId() });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: "not_found" } });
  });
});
