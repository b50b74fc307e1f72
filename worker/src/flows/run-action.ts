import { audit } from "../audit/audit.js";
import { requireAccess, resourceOf } from "../auth/access.js";
import { type Access, readsOnly, type Target } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError, type ErrorInfo } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import type { McpOrigin, ToolContext } from "./context.js";

/** One run of an action: who runs it, what it is, and where its context comes from. */
export interface ActionRun {
  env: Env;
  principal: CallerPrincipal;
  log: Log;
  /** `tool.action` (audit, errors). */
  label: string;
  access: Access;
  target: Target;
  /** What the audit entry names unless the handler says otherwise (the project, or the session). */
  auditTarget: string | null;
  mcp: McpOrigin | null;
  signal?: AbortSignal | undefined;
  /** The session whose droid makes the call (audited with it). */
  viaSession: string | null;
  /** "failures": audit only a failed outcome (see ActionDefinition.audit); default: every outcome. */
  audit?: "failures" | undefined;
  /** Keeps background writes (the audit entry) alive. */
  defer(promise: Promise<unknown>): void;
  /** The log line of an unexpected failure ("tool failed", "job failed"). */
  failureLog: string;
  handler(ctx: ToolContext): Promise<unknown>;
}

export type ActionOutcome = { ok: true; value: unknown } | { ok: false; error: ErrorInfo };

/**
 * Runs one action and audits it: the handler gets a context whose project checks use the
 * action's access and target; a typed error becomes its code, anything else `internal` (logged,
 * never shown); every action that is not a read leaves an audit entry with its outcome (only a
 * failed one for an action audited on "failures"). The one
 * path of the MCP endpoint's calls in place and of jobs.
 */
export async function runAction(run: ActionRun): Promise<ActionOutcome> {
  const { env, principal, access, target, label, log } = run;
  let auditTarget = run.auditTarget;
  const ctx: ToolContext = {
    env,
    principal,
    mcp: run.mcp,
    log,
    authorizeProject(projectId) {
      requireAccess(principal, access, resourceOf(target, projectId), `use ${label}`);
    },
    auditTarget(value) {
      auditTarget = value;
    },
    ...(run.viaSession !== null ? { viaSession: run.viaSession } : {}),
    signal: run.signal,
  };
  let outcome: ActionOutcome;
  try {
    outcome = { ok: true, value: await run.handler(ctx) };
  } catch (err) {
    if (err instanceof AppError) outcome = { ok: false, error: { code: err.code, message: err.message } };
    else {
      log.error(run.failureLog, { tool: label, error: errorMessage(err) });
      outcome = { ok: false, error: { code: "internal", message: `Internal error in ${label}` } };
    }
  }
  if (!readsOnly(access) && !(run.audit === "failures" && outcome.ok)) {
    const entry = {
      token_id: principal.tokenId,
      action: label,
      target: auditTarget,
      outcome: outcome.ok ? "ok" : outcome.error.code,
      via_session: run.viaSession,
    };
    audit(env, entry, run.defer, log);
  }
  return outcome;
}
