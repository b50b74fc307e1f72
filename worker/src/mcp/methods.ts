import { type JSONRPCRequest, LoggingLevelSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import type { McpOrigin } from "../flows/context.js";
import type { Log } from "../log.js";
import { callerTools } from "../tools/catalog.js";
import { callTool, UnknownToolError } from "../tools/dispatch.js";
import { clip, McpErrorCode, RpcError } from "./json-rpc.js";
import type { McpMeta } from "./mcp-meta.js";

/** What the method handlers need from the MCP session they run in. */
export interface MethodContext {
  env: Env;
  meta: McpMeta;
  principal: CallerPrincipal;
  origin: McpOrigin;
  log: Log;
  setLogLevel(level: McpMeta["logLevel"]): void;
  waitUntil(promise: Promise<unknown>): void;
  /** Aborted when the client cancels this request (`notifications/cancelled`). */
  signal?: AbortSignal;
}

const CallParamsSchema = z.object({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
});
const SetLevelParamsSchema = z.object({ level: LoggingLevelSchema });

/** Answers one JSON-RPC request of an initialized MCP session; returns the `result`. */
export async function handleMethod(request: JSONRPCRequest, ctx: MethodContext): Promise<unknown> {
  switch (request.method) {
    case "ping":
      return {};
    case "tools/list":
      return { tools: callerTools.list() };
    case "tools/call": {
      const params = CallParamsSchema.safeParse(request.params);
      if (!params.success)
        throw new RpcError(McpErrorCode.invalidParams, "tools/call needs params.name (a string)");
      try {
        return await callTool(callerTools, params.data.name, params.data.arguments, {
          env: ctx.env,
          principal: ctx.principal,
          mcp: ctx.origin,
          log: ctx.log,
          waitUntil: ctx.waitUntil,
          runsJobs: true,
          signal: ctx.signal,
        });
      } catch (err) {
        if (err instanceof UnknownToolError)
          throw new RpcError(McpErrorCode.invalidParams, `Unknown tool: ${clip(err.tool)}`);
        throw err;
      }
    }
    case "logging/setLevel": {
      const params = SetLevelParamsSchema.safeParse(request.params);
      if (!params.success)
        throw new RpcError(McpErrorCode.invalidParams, "logging/setLevel needs a valid params.level");
      ctx.setLogLevel(params.data.level);
      return {};
    }
    case "initialize":
      throw new RpcError(McpErrorCode.invalidRequest, "this MCP session is already initialized");
    default:
      throw new RpcError(McpErrorCode.methodNotFound, `Method not found: ${clip(request.method)}`);
  }
}
