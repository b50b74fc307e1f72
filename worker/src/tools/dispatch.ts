import type { z } from "zod";
import { audit } from "../audit/audit.js";
import { can, resourceOf } from "../auth/access.js";
import { readsOnly } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import type { McpOrigin } from "../flows/context.js";
import { runAction } from "../flows/run-action.js";
import { callAsJob, JOB_ID_META, type JobOutcomeAnswer } from "../jobs/call-as-job.js";
import type { JobInfo } from "../jobs/job-record.js";
import type { Log } from "../log.js";
import { actionLabel } from "./define.js";
import type { ToolRegistry } from "./registry.js";

/** An MCP `tools/call` result. */
export interface CallToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/** Thrown for a tool name the registry does not know: a protocol error (-32602), not a tool failure. */
export class UnknownToolError extends Error {
  constructor(readonly tool: string) {
    super(`Unknown tool: ${tool}`);
    this.name = "UnknownToolError";
  }
}

export interface CallEnvironment {
  env: Env;
  principal: CallerPrincipal;
  mcp: McpOrigin | null;
  log: Log;
  /** Keeps background work (fire-and-forget tools) alive. */
  waitUntil(promise: Promise<unknown>): void;
  /** The session whose droid calls with its API key (audited with the call). */
  viaSession?: string;
  /**
   * Actions whose timing is not `sync` run as jobs (their tool must be in the catalogue, where
   * the job's object finds it). Without it every action runs in place, as `sync` (a
   * fire-and-forget one through `waitUntil`).
   */
  runsJobs?: boolean;
  /** Aborted when the caller cancels the call (MCP `notifications/cancelled`). */
  signal?: AbortSignal;
  /** Only a `TasksCallEnvironment` may take tasks (so this type always answers a tool result). */
  tasks?: false;
}

/**
 * A call from a client that may take MCP tasks (a 2026-07-28 request); `tasks`: this request
 * declared the Tasks extension, so a job-class call whose job goes on answers a `JobTask`.
 */
export interface TasksCallEnvironment extends Omit<CallEnvironment, "tasks"> {
  tasks: boolean;
}

/** A job that goes on, answered to a caller that takes tasks (the MCP layer shows it as one). */
export class JobTask {
  constructor(readonly job: JobInfo) {}
}

/** A failed tool call as MCP says it should look: `isError` with a message a person can act on. */
export function toolError(message: string, code?: string): CallToolResult {
  return {
    content: [{ type: "text", text: code ? `${message} (${code})` : message }],
    structuredContent: code ? { error: { code, message } } : { error: { message } },
    isError: true,
  };
}

/** A successful result: the value as JSON text, and as structured content when it is an object. */
export function toolResult(value: unknown): CallToolResult {
  const result: CallToolResult = { content: [{ type: "text", text: JSON.stringify(value) }] };
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    result.structuredContent = value as Record<string, unknown>;
  }
  return result;
}

/** An ended job's outcome as the tool result the call answers, naming the job in `_meta`. */
export function jobResult(answer: JobOutcomeAnswer): CallToolResult {
  const result = answer.ok ? toolResult(answer.value) : toolError(answer.message, answer.code);
  result._meta = { [JOB_ID_META]: answer.jobId };
  return result;
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .flatMap((issue) => flattenIssue(issue, []))
    .slice(0, 5)
    .map(({ path, message }) => (path.length ? `${path.join(".")}: ${message}` : message))
    .join("; ");
}

/**
 * A union's refusal names what was wrong in the option the input came closest to (the one whose
 * issues go deepest: `approval_policy.rules.2.kind`, not just "Invalid input"); when every
 * option failed at the top, what each expected.
 */
function flattenIssue(
  issue: z.core.$ZodIssue,
  base: PropertyKey[],
): { path: PropertyKey[]; message: string }[] {
  const path = [...base, ...issue.path];
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return [{ path, message: issue.message }];
  const depth = (issues: z.core.$ZodIssue[]) => Math.max(0, ...issues.map((i) => i.path.length));
  const closest = issue.errors.reduce((best, next) => (depth(next) > depth(best) ? next : best));
  if (depth(closest) > 0) return closest.flatMap((inner) => flattenIssue(inner, path));
  const expected = issue.errors.flatMap((option) => option.map((inner) => inner.message));
  return [{ path, message: expected.join(", or ") }];
}

/**
 * Validates, authorizes and runs one tool call. Everything comes from the tool's definition:
 * the arguments schema, the action's access level and the tool's target.
 */
export function callTool(
  registry: ToolRegistry,
  name: string,
  rawArguments: unknown,
  call: TasksCallEnvironment,
): Promise<CallToolResult | JobTask>;
export function callTool(
  registry: ToolRegistry,
  name: string,
  rawArguments: unknown,
  call: CallEnvironment,
): Promise<CallToolResult>;
export async function callTool(
  registry: ToolRegistry,
  name: string,
  rawArguments: unknown,
  call: CallEnvironment | TasksCallEnvironment,
): Promise<CallToolResult | JobTask> {
  const tool = registry.get(name);
  if (!tool) throw new UnknownToolError(name);
  const parsed = tool.arguments.safeParse(rawArguments ?? {});
  if (!parsed.success) {
    return toolError(`Invalid arguments for ${name}: ${describeIssues(parsed.error)}`, "invalid_arguments");
  }
  const args = parsed.data;
  const def = tool.definition.actions[args.action];
  if (!def) return toolError(`Unknown action ${args.action} for ${name}`, "invalid_arguments");
  const label = actionLabel(tool.definition, args.action);
  const { access, target } = def;
  const projectId = typeof args.project_id === "string" ? args.project_id : null;
  // Before the handler resolves what it acts on, refuse what no scope of this token could allow.
  if (!can(call.principal, access, resourceOf(target, projectId))) {
    if (!readsOnly(access)) {
      const entry = {
        token_id: call.principal.tokenId,
        action: label,
        target: projectId,
        outcome: "forbidden",
        via_session: call.viaSession ?? null,
      };
      audit(call.env, entry, call.waitUntil, call.log);
    }
    return toolError(
      `Token ${call.principal.tokenId} may not use ${label}${projectId ? ` on project ${projectId}` : ""} (needs ${access} access)`,
      "forbidden",
    );
  }
  const timing = def.noWait?.(args) ? "async_long" : def.timing;
  if (timing !== "sync" && call.runsJobs) {
    const answer = await callAsJob({
      env: call.env,
      principal: call.principal,
      mcp: call.mcp,
      signal: call.signal,
      log: call.log,
      viaSession: call.viaSession ?? null,
      tool: name,
      action: args.action,
      label,
      timing,
      target,
      projectId,
      arguments: (rawArguments ?? {}) as Record<string, unknown>,
      tasks: call.tasks === true,
    });
    return "task" in answer ? new JobTask(answer.task) : jobResult(answer);
  }
  const run = async (): Promise<CallToolResult> => {
    const outcome = await runAction({
      env: call.env,
      principal: call.principal,
      log: call.log,
      label,
      access,
      target,
      auditTarget: projectId ?? (typeof args.session_id === "string" ? args.session_id : null),
      audit: def.audit,
      mcp: call.mcp,
      signal: call.signal,
      viaSession: call.viaSession ?? null,
      defer: call.waitUntil,
      failureLog: "tool failed",
      handler: (ctx) => def.handler(args, ctx),
    });
    return outcome.ok ? toolResult(outcome.value) : toolError(outcome.error.message, outcome.error.code);
  };
  if (def.timing === "fire_and_forget") {
    call.waitUntil(run());
    return toolResult({ status: "accepted" });
  }
  return run();
}
