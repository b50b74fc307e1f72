/**
 * Nested sessions: a droid starting another session. The child runs in its parent's project, one
 * level deeper, in the parent's workspace unless asked otherwise, always as a new session (resuming
 * "the workspace's session" would find the parent itself). The project's `max_recursion_depth`
 * bounds the depth and `max_agents_per_session` a parent's live children; both refuse with a
 * clear `limit_exceeded`.
 */

import type { ApprovalPolicy } from "../../../protocol/approvals.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";

/** Where a child session goes, decided from its parent. */
export interface ChildPlacement {
  parentId: string;
  depth: number;
  workspaceId: string;
  /** The parent's approval policies: the child is never looser. */
  approvalPolicies: ApprovalPolicy[];
  /** The parent's own network policies: neither here. */
  networkPolicies: NetworkPolicy[];
}

/** What a parent says about itself when a child is asked for. */
export interface NestInfo {
  projectId: string;
  workspaceId: string;
  depth: number;
  liveChildren: number;
  live: boolean;
  approvalPolicies: ApprovalPolicy[];
  networkPolicies: NetworkPolicy[];
}

export async function placeChild(
  env: Env,
  parentId: string,
  request: { projectId: string; workspaceId: string | undefined },
): Promise<ChildPlacement> {
  const parent = unwrap(await objects.session(env, parentId).nestInfo());
  if (!parent.live) throw new AppError("conflict", `session ${parentId} has ended; it cannot start sessions`);
  if (request.projectId !== parent.projectId) {
    throw new AppError(
      "invalid_arguments",
      `a droid starts sessions in its own project (${parent.projectId}), not ${request.projectId}`,
    );
  }
  const limits = unwrap(await objects.project(env, parent.projectId).limits());
  const depth = parent.depth + 1;
  if (depth > limits.max_recursion_depth) {
    throw new AppError(
      "limit_exceeded",
      `max_recursion_depth ${limits.max_recursion_depth} reached: session ${parentId} is at depth ${parent.depth} and may not start another level`,
    );
  }
  if (parent.liveChildren >= limits.max_agents_per_session) {
    throw new AppError(
      "limit_exceeded",
      `max_agents_per_session ${limits.max_agents_per_session} reached: session ${parentId} already runs ${parent.liveChildren} child sessions`,
    );
  }
  return {
    parentId,
    depth,
    workspaceId: request.workspaceId ?? parent.workspaceId,
    approvalPolicies: parent.approvalPolicies,
    networkPolicies: parent.networkPolicies,
  };
}
