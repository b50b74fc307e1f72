import type { InitializeRequest, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { clientCanElicit } from "./approval-elicitation-form.js";
import { type HttpReply, jsonReply } from "./json-rpc.js";
import type { McpMeta } from "./mcp-meta.js";
import { negotiateVersion } from "./protocol-version.js";
import { SERVER_INFO } from "./server-info.js";

/** What `initialize` tells every client about using this server. */
const INSTRUCTIONS =
  "Oubliette runs droids (AI coding agents) in containers. Use the session tool to spawn one and " +
  "send it messages. Declare caller_id and caller_tools to lend the droid your own tools: each call " +
  "is a caller_tool_request event (request_id, tool, arguments, deadline); answer it with " +
  "caller_tool_response before its deadline. Events arrive as notifications/message (logger " +
  "oubliette.caller_tool for requests). If you cannot see notifications, poll session events with " +
  "wait_seconds (since_index = the last next_index) or call session pending, then answer. If you " +
  "leave between turns, spawn with caller_presence deadline so requests wait for you.";

/**
 * A 2025-era MCP session as `initialize` opens it: its record (the version both sides speak,
 * the client's name, whether it can be asked questions) and the answer to the request.
 */
export function newMcpSession(
  request: InitializeRequest & JSONRPCRequest,
  principal: CallerPrincipal,
  sessionId: string,
): { meta: McpMeta; reply: HttpReply } {
  const protocolVersion = negotiateVersion(request.params.protocolVersion);
  const meta: McpMeta = {
    sessionId,
    tokenId: principal.tokenId,
    protocolVersion,
    clientName: request.params.clientInfo.name.slice(0, 128),
    logLevel: "debug",
    createdAt: new Date().toISOString(),
    lastActivity: Date.now(),
    canElicit: clientCanElicit(protocolVersion, request.params.capabilities),
  };
  const result = {
    protocolVersion,
    capabilities: { tools: { listChanged: false }, logging: {} },
    serverInfo: SERVER_INFO,
    instructions: INSTRUCTIONS,
  };
  return {
    meta,
    reply: jsonReply({ jsonrpc: "2.0", id: request.id, result }, { "mcp-session-id": sessionId }),
  };
}
