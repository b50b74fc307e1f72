import { z } from "zod";
import { FakeHost, SessionTunnel, uniqueHostId } from "./fake-host.js";
import { callTool, initialize, type ToolResult } from "./mcp.js";
import { createProject } from "./projects.js";
import { sessionStub } from "./session.js";

/**
 * A session spawned through the MCP `session` tool (lending `send_response`) on a fresh fake
 * host that holds its tunnel. The spawning MCP session has opened no stream: it counts as a
 * polling caller until it ends.
 */
export async function mcpSpawned(spawnArgs: Record<string, unknown> = {}) {
  const host = await FakeHost.connect(uniqueHostId());
  const mcp = await initialize();
  const spawned = await callTool(mcp, "session", {
    action: "spawn",
    project_id: await createProject(),
    caller_id: "ant",
    caller_tools: [{ name: "send_response", inputSchema: { type: "object" } }],
    ...spawnArgs,
  });
  if (spawned.isError) throw new Error(`spawn failed: ${spawned.content[0]?.text}`);
  const sessionId = z.string().parse(spawned.structuredContent?.session_id);
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(host.hostId);
  return { host, mcp, sessionId, tunnel, stub: sessionStub(sessionId) };
}

/** The structured result of a tool call that must succeed. */
export function okResult(result: ToolResult): Record<string, unknown> {
  if (result.isError) throw new Error(`the tool failed: ${result.content[0]?.text}`);
  return result.structuredContent ?? {};
}

const OpenRequestSchema = z.object({
  request_id: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  deadline: z.string(),
});

/** What `session pending` answers. */
export const PendingSchema = z.object({
  session_id: z.string(),
  status: z.string(),
  caller_id: z.string().nullable(),
  caller_presence: z.enum(["stream", "deadline"]),
  pending_caller_requests: z.number(),
  open_requests: z.array(OpenRequestSchema),
});

/** `session pending` through MCP session `mcp`. */
export async function pending(mcp: string, sessionId: string) {
  return PendingSchema.parse(
    okResult(await callTool(mcp, "session", { action: "pending", session_id: sessionId })),
  );
}
