import type { CallerPrincipal } from "../../auth/tokens.js";
import type { Env } from "../../env.js";
import type { Log } from "../../log.js";
import type { McpOrigin } from "../../tools/context.js";
import type { ClientCapabilities, RequestEnvelope } from "./envelope.js";

/** What a stateless method handler gets: the request, who sent it, and how to report progress. */
export interface ModernCall {
  env: Env;
  principal: CallerPrincipal;
  log: Log;
  envelope: RequestEnvelope;
  params: Record<string, unknown>;
  /** The request's MCP origin for tool calls (no MCP session: `via` is null). */
  origin: McpOrigin;
  /** Aborted when the client closes the response stream (the spec's cancellation). */
  signal: AbortSignal;
  /** A request header (name case-insensitive), OWS not yet stripped. */
  header(name: string): string | undefined;
  waitUntil(promise: Promise<unknown>): void;
}

/** A method of the stateless era: its routing and capability rules, and its handler. */
export interface ModernMethod {
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
  /** The `result` (`resultType` and server info are added by the caller when absent). */
  handle(call: ModernCall): Promise<Record<string, unknown>>;
}
