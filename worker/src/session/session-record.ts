import type { CallerTool } from "../../../protocol/caller-tools.js";
import type { JsonMap } from "../../../protocol/json.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import type { NetworkUsage } from "../../../protocol/network-activity.js";
import type { UsageTotals } from "../../../protocol/usage.js";
import type { OpenApproval } from "./approval-records.js";
import type { NetworkInfo } from "./session-network.js";
import type { CallerPresence, SessionAgentSpec, SessionApprovals } from "./types.js";

/** A caller tool request that waits for the caller's answer, as `session get` and `session pending` list it. */
export interface OpenRequest {
  request_id: string;
  tool: string;
  /** The droid's arguments. */
  arguments: JsonMap;
  deadline: string;
}

/** `lost`: its host was gone past the grace period, or came back without it. */
export type SessionStatus = "starting" | "running" | "exited" | "failed" | "ended" | "lost";

/** Everything a SessionDurableObject knows about its session, persisted as one row. */
export interface SessionRecord {
  sessionId: string;
  projectId: string;
  workspaceId: string;
  ownerTokenId: string;
  callerId: string | null;
  callerTools: CallerTool[];
  callerTimeoutMs: number;
  /** What the caller's absence does to waiting calls (see Presence); `stream` for older records. */
  callerPresence: CallerPresence;
  status: SessionStatus;
  hostId: string | null;
  runtime: string | null;
  image: string | null;
  /** The agent the session runs (absent in records older than agent runtimes: the scripted droid). */
  agent?: SessionAgentSpec;
  /** The session whose droid started this one (null: a caller did), its depth, and its own children. */
  parentId?: string | null;
  depth?: number;
  children?: string[];
  /** The API key the server issued for this session's droid; revoked when the session ends. */
  issuedTokenId?: string | null;
  /** Model usage as the host's proxy metered it (null until the first report). */
  usage?: UsageTotals | null;
  createdAt: string;
  endedAt: string | null;
  /** Seq of the last message queued for the droid. */
  lastMessageSeq: number;
  /** Highest agent event seq stored (agent events are idempotent by seq). */
  storedHostEventSeq: number;
  /** Idle timeout and lifetime cap (0: none), from the project's limits at spawn. */
  idleTimeoutMs: number;
  maxLifetimeMs: number;
  /** Last message, droid event or caller tool call (epoch ms): the idle clock. */
  lastActivityAt: number | null;
  /** Highest message seq whose turn the droid finished (a `completion` event). */
  completedTurnSeq: number;
  /** When the owner's last plain SSE/WebSocket subscriber went away (epoch ms), for the grace period. */
  plainDroppedAt: number | null;
  /** Schedules waiting for this session to be idle (their queued runs start then). */
  idleWatchers?: string[];
  /** The last pushes the host told of (`git_pushed` ids), so one re-sent after a reconnect is told once. */
  recentPushIds?: string[];
  /** What its agent asks before acting, and what was allowed for the session (absent: nothing). */
  approvals?: SessionApprovals;
  /** Its own network policy, what the host's gate reported of it, and the refusals already told. */
  network?: {
    policies: NetworkPolicy[];
    usage: NetworkUsage | null;
    blockedCount?: number;
    recentBlockedIds?: string[];
  };
}

/** What `session get` (and spawn) return. */
export interface SessionInfo {
  session_id: string;
  project_id: string;
  workspace_id: string;
  status: SessionStatus;
  host_id: string | null;
  runtime: string | null;
  parent_session_id: string | null;
  depth: number;
  children: string[];
  /** The agent runtime (scripted, claude, droid, …) and its model. */
  agent: string;
  model: string | null;
  /** Model usage so far (tokens, estimated cost); null before the first model response. */
  usage: UsageTotals | null;
  max_cost_usd: number | null;
  caller_id: string | null;
  caller_tools: string[];
  caller_timeout_ms: number;
  caller_presence: CallerPresence;
  /** How many caller tool requests wait for an answer ... */
  pending_caller_requests: number;
  /** ... and the first of them, soonest deadline first. */
  open_requests: OpenRequest[];
  /** How many approval requests of its agent wait for an answer, and the first of them. */
  pending_approvals: number;
  open_approvals: OpenApproval[];
  /** What its agent asks before acting: the policies applied (strictest wins), and what was allowed for the session. */
  approval_policies: SessionApprovals["policies"];
  session_allowances: SessionApprovals["allowances"];
  /** Its own network policy (null: the project's alone), the hosts it reached, and how many connections were refused. */
  network: NetworkInfo;
  /** A turn or a caller tool call is in flight (the session is not idle). */
  busy: boolean;
  idle_timeout_seconds: number;
  max_lifetime_seconds: number;
  next_index: number;
  created_at: string;
  ended_at: string | null;
}

/** What `session pending` returns. */
export type PendingRequests = Pick<
  SessionInfo,
  | "session_id"
  | "status"
  | "caller_id"
  | "caller_presence"
  | "pending_caller_requests"
  | "open_requests"
  | "pending_approvals"
  | "open_approvals"
>;

export function isLive(status: SessionStatus): boolean {
  return status === "starting" || status === "running";
}
