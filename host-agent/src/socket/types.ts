import type { HandlerContext } from "../../../lib/rpc/peer.js";
import type { AgentEvent, AgentState } from "../../../protocol/agent-events.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import type { ContainerConnection } from "./container-connection.js";

/** One caller tool call, as the droid's container-client asked for it. */
export interface CallerToolRequest {
  call_id?: string | undefined;
  tool: string;
  arguments: JsonObject;
}

/** What the host-agent does with what arrives on a session's container socket. */
export interface ContainerHandlers {
  /**
   * Runs one caller tool call: resolves with the caller's result or throws an RpcError. `ctx.signal`
   * aborts when the droid cancels (RequestCancelled) or the connection closes (ConnectionClosed).
   */
  callerTool(request: CallerToolRequest, ctx: HandlerContext): Promise<JsonValue>;
  /** A connection authenticated as the runner, reporting where its agent is. */
  runnerConnected(connection: ContainerConnection, agent: AgentState): void;
  /** The runner's connection closed. */
  runnerGone(connection: ContainerConnection): void;
  /** New (or re-sent) agent events from the runner. */
  agentEvents(events: AgentEvent[]): void;
}
