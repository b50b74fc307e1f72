import type { JsonNode } from "../../../protocol/json.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import type { ErrorInfo } from "../errors.js";
import { catalog } from "../flows/catalog.js";
import { runAction } from "../flows/run-action.js";
import type { Log } from "../log.js";
import { objects } from "../objects/keys.js";
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
 * write (flows/run-action.ts). The tool comes from the catalogue by name: only its tools run as jobs.
 */
export async function runJob(input: JobRunInput): Promise<JobOutcome> {
  const { env, record, principal, log } = input;
  const action = catalog().jobAction(record.tool, input.arguments);
  if (!action) {
    return { ok: false, error: { code: "internal", message: `${record.label} cannot run as a job here` } };
  }
  const { args } = action;
  const writes: Promise<unknown>[] = [];
  const via = record.mcp;
  const outcome = await runAction({
    env,
    principal,
    log,
    label: record.label,
    access: action.access,
    target: action.target,
    auditTarget: record.projectId ?? (typeof args.session_id === "string" ? args.session_id : null),
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
    signal: input.signal,
    viaSession: record.viaSession,
    defer: (p) => writes.push(p),
    failureLog: "job failed",
    handler: (ctx) => action.run(ctx),
  });
  await Promise.allSettled(writes);
  // Handlers answer JSON (a tool result is JSON text); undefined becomes null.
  return outcome.ok ? { ok: true, value: (outcome.value ?? null) as JsonNode } : outcome;
}
