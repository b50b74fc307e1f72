import { z } from "zod";
import { clip } from "../../../../protocol/rpc/errors.js";
import { callerTools } from "../../tools/catalog.js";
import { callTool, JobTask, UnknownToolError } from "../../tools/dispatch.js";
import { McpErrorCode, RpcError } from "../json-rpc.js";
import { approvalRound } from "./approval-round.js";
import { CacheHints } from "./cache-hints.js";
import { confirmationRound } from "./confirmation.js";
import { declaresTasks } from "./envelope.js";
import type { ModernMethod } from "./method.js";
import { paramHeaderMismatch, withParamHeaders } from "./param-headers.js";
import { createTaskResult } from "./tasks.js";

const listing = callerTools.list().map(withParamHeaders);

const CallParamsSchema = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
});

/** `tools/list`: the caller catalogue, the same for every token (public, cacheable). */
export const toolsList: ModernMethod = {
  async handle() {
    return { tools: listing, ...CacheHints.catalogue };
  },
};

/**
 * `tools/call`: the same dispatch as the 2025 era (schemas, access, audit, jobs). A call that
 * waits reports progress on its own response stream, and the client closing that stream cancels
 * it. An action that asks for confirmation first gets its input-required round (confirmation.ts);
 * a caller following a session (`session events|pending|get`) that can elicit is asked about the
 * approvals waiting there in one (approval-round.ts). The two never apply to the same action.
 * A request declaring the Tasks extension gets a task for a job that goes on (tasks.ts).
 */
export const toolsCall: ModernMethod = {
  routedBy: "name",
  headerMismatch(params, header) {
    const name = typeof params.name === "string" ? params.name : "";
    const args = typeof params.arguments === "object" && params.arguments !== null ? params.arguments : {};
    return paramHeaderMismatch(name, args as Record<string, unknown>, header);
  },
  async handle(call) {
    const params = CallParamsSchema.safeParse(call.params);
    if (!params.success)
      throw new RpcError(McpErrorCode.invalidParams, "tools/call needs params.name (a string)");
    const round =
      (await confirmationRound(call, params.data.name, params.data.arguments)) ??
      (await approvalRound(call, params.data.name, params.data.arguments));
    if (round !== null) return round;
    try {
      const answer = await callTool(callerTools, params.data.name, params.data.arguments, {
        env: call.env,
        principal: call.principal,
        mcp: call.origin,
        log: call.log,
        waitUntil: call.waitUntil,
        runsJobs: true,
        signal: call.signal,
        tasks: declaresTasks(call.envelope.capabilities),
      });
      return answer instanceof JobTask ? createTaskResult(answer.job) : answer;
    } catch (err) {
      if (err instanceof UnknownToolError)
        throw new RpcError(McpErrorCode.invalidParams, `Unknown tool: ${clip(err.tool)}`);
      throw err;
    }
  },
};
