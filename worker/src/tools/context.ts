import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import type { Log } from "../log.js";
import type { Via } from "../session/types.js";

/** The MCP session a tool call came through. */
export interface McpOrigin {
  via: Via;
  /** Remembers a droid session this MCP session now receives events of. */
  remember(sessionId: string): void;
}

/** What a tool handler gets besides its arguments. */
export interface ToolContext {
  env: Env;
  principal: CallerPrincipal;
  mcp: McpOrigin | null;
  /** Throws `forbidden` unless the principal has this action's access on `projectId`. */
  authorizeProject(projectId: string): void;
  /** Records what the call acted on, for the audit log (e.g. the id of what it created). */
  auditTarget(target: string): void;
  log: Log;
}
