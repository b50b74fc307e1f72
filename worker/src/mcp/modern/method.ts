import type { CallerPrincipal } from "../../auth/tokens.js";
import type { Env } from "../../env.js";
import type { McpOrigin } from "../../flows/context.js";
import type { Log } from "../../log.js";
import type { ClientCapabilities, RequestEnvelope } from "./envelope.js";

/** What a stateless method handler gets: the request, who sent it, and how to report progress. */
export interface ModernCall {
  /** The request's JSON-RPC id (a `subscriptions/listen` stream names itself by it). */
  id: string | number;
  env: Env;
  principal: CallerPrincipal;
  log: Log;
  envelope: RequestEnvelope;
  params: Record<string, unknown>;
  /** The request's MCP origin for tool calls (no MCP session: `via` is null). */
  origin: McpOrigin;
  /**
   * Aborted when the client closes the response stream (the spec's cancellation); a `stream`
   * method watches the stream it makes itself.
   */
  signal: AbortSignal;
  /** A request header (name case-insensitive), OWS not yet stripped. */
  header(name: string): string | undefined;
  waitUntil(promise: Promise<unknown>): void;
}

/** What every method of the stateless era may declare: its routing and capability rules. */
interface MethodRules {
  /** The params field the `Mcp-Name` header mirrors (`tools/call`, `resources/read`, `tasks/*`). */
  routedBy?: "name" | "uri" | "taskId";
  /** The capabilities this request needs that it did not declare (400, -32021), or null. */
  missingCapabilities?(
    capabilities: ClientCapabilities,
    params: Record<string, unknown>,
  ): ClientCapabilities | null;
  /** Checks headers beyond the standard ones (`Mcp-Param-*`); why they do not match, or null. */
  headerMismatch?(
    params: Record<string, unknown>,
    header: (name: string) => string | undefined,
  ): string | null;
}

/**
 * A method of the stateless era: its rules, and either a handler answering one `result`
 * (`resultType` and server info are added by the caller when absent), or — for a long-lived
 * request such as `subscriptions/listen` — one answering with its own streamed Response. Either
 * may throw an `RpcError`, which becomes the JSON-RPC error answer.
 */
export type ModernMethod = MethodRules &
  (
    | { handle(call: ModernCall): Promise<Record<string, unknown>> }
    | { stream(call: ModernCall): Promise<Response> }
  );
