import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { checkSize, type SizedKind } from "../../../protocol/limits.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import { MAX_SESSION_POLICIES } from "../../../protocol/tunnel.js";
import type { WorkspaceBranch } from "../../../protocol/tunnel-git.js";
import { randomHex } from "../auth/digest.js";
import { config } from "../env.js";
import { AppError, type Result, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { projectSpec, sessionAgent, setupSpec, workspaceSetup } from "../projects/project-config.js";
import { droidKey, type OublietteAccess } from "../session/droid-key.js";
import { placeChild } from "../session/nesting.js";
import type { CallerDeclaration, CallerPresence } from "../session/types.js";
import type { McpOrigin, ToolContext } from "./context.js";
import { invalidJsonSchema } from "./input-schema-check.js";
import {
  type ApprovalArgs,
  approvalsMode,
  requireAskingRuntime,
  sessionApprovals,
} from "./session-approvals.js";

/**
 * Starting a session, or resuming the workspace's running one: the seed's spawn semantics, shared
 * by the session tool (`spawn`, `message` by project) and by schedules.
 */

export type CallerFields = {
  caller_presence?: CallerPresence | undefined;
  caller_id?: string | undefined;
  caller_tools?: CallerDeclaration["tools"] | undefined;
  context?:
    | { caller_id?: string | undefined; caller_tools?: CallerDeclaration["tools"] | undefined }
    | undefined;
};

/** Merges the two declaration forms; giving the same field both ways with different values is an error. */
export function callerDeclaration(args: CallerFields): CallerDeclaration | null {
  const pick = <T>(name: string, top: T | undefined, inContext: T | undefined): T | undefined => {
    if (top !== undefined && inContext !== undefined && JSON.stringify(top) !== JSON.stringify(inContext)) {
      throw new AppError(
        "invalid_arguments",
        `${name} is given both top-level and in context, with different values`,
      );
    }
    return top ?? inContext;
  };
  const callerId = pick("caller_id", args.caller_id, args.context?.caller_id);
  const tools = pick("caller_tools", args.caller_tools, args.context?.caller_tools);
  if (callerId === undefined && tools === undefined) return null;
  if (callerId === undefined) throw new AppError("invalid_arguments", "caller_tools needs a caller_id");
  const declaration = { callerId, tools: tools ?? [] };
  requireFits("declaration", { caller_id: declaration.callerId, caller_tools: declaration.tools });
  declaration.tools.forEach((tool, i) => {
    if (tool.inputSchema === undefined) return;
    const problem = invalidJsonSchema(tool.inputSchema);
    if (problem !== null) {
      throw new AppError(
        "invalid_arguments",
        `caller_tools[${i}] (${tool.name}): inputSchema is not a valid JSON Schema: ${problem}`,
      );
    }
  });
  return declaration;
}

/** Refuses input over its budget (protocol/limits.ts) with a too_large error naming the limit. */
export function requireFits(kind: SizedKind, value: unknown): void {
  const tooLarge = checkSize(kind, value);
  if (tooLarge) throw new AppError("too_large", tooLarge.message);
}

export function sessionStub(ctx: ToolContext, sessionId: string) {
  return objects.session(ctx.env, sessionId);
}

/** Unwraps a session RPC result and subscribes the calling MCP session to the session. */
export function settled<T>(ctx: ToolContext, sessionId: string, result: Result<T>): T {
  const value = unwrap(result);
  ctx.mcp?.remember(sessionId);
  return value;
}

export interface SpawnArgs extends CallerFields, ApprovalArgs {
  project_id: string;
  workspace_id?: string | undefined;
  create_workspace: boolean;
  branch?: true | string | undefined;
  base?: string | undefined;
  new_session: boolean;
  relocate?: boolean | undefined;
  external_id?: string | undefined;
  source?: string | undefined;
  agent?: AgentRuntime | undefined;
  model?: string | undefined;
  oubliette_access?: OublietteAccess | undefined;
  oubliette_api_key?: string | undefined;
  prompt?: string | undefined;
  caller_timeout_seconds?: number | undefined;
  /** The session's own network policy, applied with its project's (and its parent's): never looser. */
  network?: NetworkPolicy | undefined;
}

/** Spawn, or resume the workspace's running session: the seed's semantics, shared with `message`. */
export async function spawnOrResume(args: SpawnArgs, ctx: ToolContext) {
  ctx.authorizeProject(args.project_id);
  const cfg = config(ctx.env);
  const timeoutMs =
    args.caller_timeout_seconds === undefined ? cfg.callerTimeoutMs : args.caller_timeout_seconds * 1000;
  if (timeoutMs > cfg.maxCallerTimeoutMs) {
    throw new AppError(
      "invalid_arguments",
      `caller_timeout_seconds may be at most ${cfg.maxCallerTimeoutMs / 1000}`,
    );
  }
  if (args.prompt !== undefined) requireFits("message", args.prompt);
  const caller = callerDeclaration(args);
  const sessionId = `ses_${randomHex(12)}`;
  const branch = sessionBranch(args, sessionId);
  const createWorkspace = args.create_workspace || branch !== null;
  // A droid's spawn starts a child: in its project, one level deeper, always a new session.
  const child =
    ctx.viaSession === undefined
      ? null
      : await placeChild(ctx.env, ctx.viaSession, {
          projectId: args.project_id,
          workspaceId: args.workspace_id,
        });
  const plan = unwrap(
    await objects.project(ctx.env, args.project_id).openSession({
      sessionId,
      workspaceId: args.workspace_id ?? (createWorkspace ? null : (child?.workspaceId ?? null)),
      createWorkspace,
      newSession: args.new_session || child !== null || branch !== null,
      ownerTokenId: ctx.principal.tokenId,
      externalId: args.external_id ?? null,
      source: args.source ?? null,
    }),
  );
  if (plan.kind === "resume") {
    ctx.auditTarget(plan.sessionId);
    if (args.approval_policy !== undefined || args.approval_timeout_seconds !== undefined) {
      throw new AppError(
        "invalid_arguments",
        `session ${plan.sessionId} runs in this workspace and keeps the approval policy it was started with; ` +
          "new_session: true starts another with approval_policy",
      );
    }
    if (args.network !== undefined) {
      throw new AppError(
        "invalid_arguments",
        `session ${plan.sessionId} runs in this workspace and keeps the network policy it was started with; ` +
          "new_session: true starts another with network",
      );
    }
    const stub = sessionStub(ctx, plan.sessionId);
    if (args.prompt === undefined && caller === null && args.caller_presence === undefined) {
      return {
        ...settled(ctx, plan.sessionId, await stub.getInfo(ctx.principal, ctx.mcp?.via ?? null)),
        resumed: true,
      };
    }
    const sent = settled(
      ctx,
      plan.sessionId,
      await stub.sendMessage({
        principal: ctx.principal,
        message: args.prompt ?? null,
        caller,
        callerPresence: args.caller_presence ?? null,
        via: ctx.mcp?.via ?? null,
      }),
    );
    return { ...sent.session, message_seq: sent.message_seq, resumed: true };
  }
  ctx.auditTarget(sessionId);
  const approvals = sessionApprovals(plan.config, child?.approvalPolicies ?? [], args);
  const agent = sessionAgent(plan.config, args);
  const key = await refusedBeforeStart(ctx, args.project_id, sessionId, async () => {
    requireAskingRuntime(approvals, agent.runtime);
    return droidKey(
      ctx.env,
      { access: args.oubliette_access ?? "none", apiKey: args.oubliette_api_key },
      {
        sessionId,
        projectId: args.project_id,
        owner: ctx.principal,
        lifetimeMs: plan.config.limits.max_lifetime_seconds * 1000,
      },
    );
  });
  const result = await sessionStub(ctx, sessionId).create({
    sessionId,
    projectId: args.project_id,
    workspaceId: plan.workspaceId,
    owner: ctx.principal,
    caller,
    callerTimeoutMs: timeoutMs,
    callerPresence: args.caller_presence ?? defaultPresence(ctx.mcp),
    prompt: args.prompt ?? null,
    image: plan.config.image ?? null,
    project: projectSpec(plan.config),
    workspace: workspaceSetup(plan.config, plan.workspaceId, branch),
    setup: setupSpec(plan.config),
    agent: { ...agent, approvals: approvalsMode(approvals) },
    approvals,
    network: [...(child?.networkPolicies ?? []), ...(args.network ? [args.network] : [])].slice(
      -MAX_SESSION_POLICIES,
    ),
    droidKey: key,
    parent: child && { sessionId: child.parentId, depth: child.depth },
    via: ctx.mcp?.via ?? null,
    idleTimeoutMs: plan.config.limits.idle_timeout_seconds * 1000,
    maxLifetimeMs: plan.config.limits.max_lifetime_seconds * 1000,
    ...(args.relocate === true ? { relocate: true } : {}),
  });
  const created = settled(ctx, sessionId, result);
  if (child) unwrap(await objects.session(ctx.env, child.parentId).addChild(sessionId));
  return { ...created, ...(branch !== null ? { branch: branch.name } : {}), resumed: false };
}

/**
 * The branch a new session works on, in a workspace made for it: `branch` names it (true: the
 * default `oubliette/<session short id>`), from the remote's `base`.
 */
function sessionBranch(args: SpawnArgs, sessionId: string): WorkspaceBranch | null {
  if (args.branch === undefined) {
    if (args.base !== undefined)
      throw new AppError("invalid_arguments", "base is the start of a branch; give branch too");
    return null;
  }
  if (args.workspace_id !== undefined && !args.create_workspace)
    throw new AppError(
      "invalid_arguments",
      "a session with a branch works in a new workspace: give create_workspace: true with workspace_id, or omit workspace_id",
    );
  const name = args.branch === true ? `oubliette/${sessionId.slice(4, 12)}` : args.branch;
  return { name, ...(args.base !== undefined ? { base: args.base } : {}) };
}

/**
 * Work between the project's index entry and the session object: a refusal there (a policy the
 * runtime cannot honour, a key that does not hold) marks the entry failed, so the workspace does
 * not look busy with a session that never existed.
 */
async function refusedBeforeStart<T>(
  ctx: ToolContext,
  projectId: string,
  sessionId: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    await objects.project(ctx.env, projectId).sessionStatus({ sessionId, status: "failed", reason });
    throw err;
  }
}

/**
 * `caller_presence` when the spawn names none: `stream` for a caller with an MCP session (it is
 * present while its session's stream is), `deadline` for a stateless (2026-07-28) caller, which
 * has no session to be present on — its requests wait for an answer until their deadline.
 */
export function defaultPresence(mcp: McpOrigin | null): CallerPresence {
  return mcp !== null && mcp.via === null ? "deadline" : "stream";
}
