/**
 * What the runner is told to start for a session: the agent's working directory, its environment
 * (its socket, and git that reaches the project's remote through the host), its home, its uid and
 * gid, and for a CLI agent the placeholder model credential by which the model proxy knows (and
 * meters) the session.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { sessionGitEnv, sessionSocketPath } from "../../../protocol/container-layout.js";
import { AgentEnv, type AgentStartParams } from "../../../protocol/socket.js";
import type { SessionSpec } from "../../../protocol/tunnel.js";
import type { SessionGit } from "../../../protocol/tunnel-git.js";
import type { WorkloadPaths } from "../runtime/types.js";
import type { SessionIdentity } from "./session-identity.js";

/** Which agent a session runs (default: the scripted droid). */
export type SessionAgent = NonNullable<SessionSpec["agent"]>;

export interface AgentLaunchInput {
  sessionId: string;
  workspaceId: string;
  env: Record<string, string>;
  agent: SessionAgent;
  git: SessionGit | undefined;
  identity: SessionIdentity;
  /** Where the container sees the sockets, workspaces and homes. */
  paths: WorkloadPaths;
  /** Whether sessions are separate uids (then git reaches the remote through the host). */
  separate: boolean;
}

export interface AgentLaunch {
  /** The model budget the proxy holds the session to (null: the scripted droid uses no model). */
  models: { token: string; budgetUsd: number | undefined } | null;
  start: Omit<AgentStartParams, "session_id" | "session_token">;
}

export function agentLaunch(input: AgentLaunchInput): AgentLaunch {
  const { agent, identity, paths } = input;
  const modelToken = agent.runtime === "scripted" ? null : `oubm_${randomBytes(24).toString("hex")}`;
  return {
    models: modelToken === null ? null : { token: modelToken, budgetUsd: agent.max_cost_usd },
    start: {
      cwd: join(paths.workspaceRoot, input.workspaceId),
      env: {
        ...input.env,
        // A container has no network: its git reaches the project's remote through the host.
        ...sessionGitEnv(input.separate ? input.git?.remote_url : undefined),
        [AgentEnv.socketPath]: sessionSocketPath(paths.socketDir, input.sessionId),
      },
      home: join(paths.homesRoot, input.sessionId),
      ...(identity.uid !== null && identity.gid !== null ? { uid: identity.uid, gid: identity.gid } : {}),
      agent: {
        runtime: agent.runtime,
        ...(agent.model !== undefined ? { model: agent.model } : {}),
        ...(modelToken !== null ? { model_token: modelToken } : {}),
        approvals: agent.approvals ?? "auto",
      },
    },
  };
}
