import { project, requireAccess } from "../auth/access.js";
import type { Access } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import type { Log } from "../log.js";
import type { Via } from "../session/types.js";

/** How far a call that waits has come (an MCP progress notification's fields). */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message: string;
}

/** The MCP request a tool call came through. */
export interface McpOrigin {
  /**
   * The 2025-era MCP session (`Mcp-Session-Id`) the call came through; null for a stateless
   * (2026-07-28) request, which belongs to no session.
   */
  via: Via | null;
  /** Remembers a droid session this MCP session now receives events of. */
  remember(sessionId: string): void;
  /**
   * A call that waits tells the client it is still at work (MCP progress); false once the client
   * is known to be gone, when the call should stop waiting.
   */
  progress(update: ProgressUpdate): boolean;
  /** How often a call that waits reports progress (the keep-alive period). */
  progressEveryMs: number;
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
  /** The session whose droid makes the call (with its key, or through its socket): it nests what it starts. */
  viaSession?: string;
  /**
   * Aborted when the caller cancels the work (`job cancel`, or MCP `notifications/cancelled`);
   * work that can stop early passes it on (a host request is cancelled on the host).
   */
  signal?: AbortSignal;
}

/**
 * A context for work no MCP call drives (a schedule's run), with `principal`'s authority. There
 * is no MCP session to follow the work, and the caller audits it itself.
 */
export function backgroundContext(input: {
  env: Env;
  principal: CallerPrincipal;
  access: Access;
  /** What the work is, for refusals ("run schedule sch_…"). */
  what: string;
  log: Log;
}): ToolContext {
  const { env, principal, access, what, log } = input;
  return {
    env,
    principal,
    mcp: null,
    log,
    authorizeProject(projectId) {
      requireAccess(principal, access, project(projectId), what);
    },
    auditTarget() {},
  };
}
