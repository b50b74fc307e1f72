import type { JsonNode } from "../../../protocol/json.js";
import { audit } from "../audit/audit.js";
import { requireAccess, resourceOf } from "../auth/access.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { AppError, type ErrorInfo } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import { callerTools } from "../tools/catalog.js";
import type { ToolContext } from "../tools/context.js";
import type { JobRecord } from "./job-record.js";

export type JobOutcome = { ok: true; value: JsonNode } | { ok: false; error: ErrorInfo };

export interface JobRunInput {
  env: Env;
  record: JobRecord;
  arguments: Record<string, unknown>;
  principal: CallerPrincipal;
  /** Aborted when the job is cancelled. */
  signal: AbortSignal;
  /** The work reports progress; false once the job was cancelled. */
  progress(message: string): boolean;
  /** The work acts on (or started) droid session `sessionId`. */
  actsOn(sessionId: string): void;
  log: Log;
}

/**
 * Runs a job's action the way the MCP endpoint runs a call in place: its arguments parsed again
 * (this is a boundary), the action's own access checks inside its handler, an audit entry for a
 * write. The tool comes from the catalogue by name: only its tools run as jobs.
 */
export async function runJob(input: JobRunInput): Promise<JobOutcome> {
  const { env, record, principal, log } = input;
  const tool = callerTools.get(record.tool);
  const parsed = tool?.arguments.safeParse(input.arguments);
  const def = parsed?.success ? tool?.definition.actions[parsed.data.action] : undefined;
  if (!parsed?.success || !def) {
    return { ok: false, error: { code: "internal", message: `${record.label} cannot run as a job here` } };
  }
  const args = parsed.data;
  let auditTarget = record.projectId ?? (typeof args.session_id === "string" ? args.session_id : null);
  const writes: Promise<unknown>[] = [];
  const via = record.mcp;
  const ctx: ToolContext = {
    env,
    principal,
    log,
    signal: input.signal,
    mcp:
      via === null && record.stateless !== true
        ? null
        : {
            via,
            remember: (sessionId) => {
              input.actsOn(sessionId);
              if (via) writes.push(objects.mcpSession(env, via.mcpSessionId).follow(sessionId));
            },
            progress: (update) => input.progress(update.message),
            progressEveryMs: config(env).keepAliveMs,
          },
    authorizeProject(projectId) {
      requireAccess(principal, def.access, resourceOf(def.target, projectId), `use ${record.label}`);
    },
    auditTarget(value) {
      auditTarget = value;
    },
    ...(record.viaSession !== null ? { viaSession: record.viaSession } : {}),
  };
  let outcome: JobOutcome;
  try {
    // Handlers answer JSON (a tool result is JSON text); undefined becomes null.
    outcome = { ok: true, value: ((await def.handler(args, ctx)) ?? null) as JsonNode };
  } catch (err) {
    if (err instanceof AppError) outcome = { ok: false, error: { code: err.code, message: err.message } };
    else {
      log.error("job failed", { tool: record.label, error: errorMessage(err) });
      outcome = { ok: false, error: { code: "internal", message: `Internal error in ${record.label}` } };
    }
  }
  if (def.access !== "read") {
    const entry = {
      token_id: principal.tokenId,
      action: record.label,
      target: auditTarget,
      outcome: outcome.ok ? "ok" : outcome.error.code,
      via_session: record.viaSession,
    };
    audit(env, entry, (p) => writes.push(p), log);
  }
  await Promise.allSettled(writes);
  return outcome;
}
