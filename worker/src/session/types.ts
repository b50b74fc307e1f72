import type { ApprovalPolicy, SessionAllowance } from "../../../protocol/approvals.js";
import type { CallerTool } from "../../../protocol/caller-tools.js";
import type { JsonValue } from "../../../protocol/json.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import type { SetupSpec } from "../../../protocol/setup.js";
import type { SessionSpec } from "../../../protocol/tunnel.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { WorkspaceSetup } from "../projects/project-config.js";
import type { DroidKey } from "./droid-key.js";

export type SessionAgentSpec = NonNullable<SessionSpec["agent"]>;

/** The MCP session a call came through; the owner's MCP sessions get the session's events. */
export interface Via {
  mcpSessionId: string;
  streaming: boolean;
}

/**
 * What happens to a session's waiting caller tool calls when no stream of its caller is open:
 * `stream`, they fail after a short grace period; `deadline`, they wait until their deadline.
 */
export const CALLER_PRESENCE = ["stream", "deadline"] as const;
export type CallerPresence = (typeof CALLER_PRESENCE)[number];

export interface CallerDeclaration {
  callerId: string;
  tools: CallerTool[];
}

/**
 * How a session's agent asks before acting: every policy in `policies` is applied and the
 * strictest verdict wins (the project's, its parent session's, its own), so a session is never
 * looser than what it was started under.
 */
export interface ApprovalSettings {
  policies: ApprovalPolicy[];
  timeoutMs: number;
  denialMessage: string;
}

/** A session's approval settings with the `allow_session` answers given so far. */
export interface SessionApprovals extends ApprovalSettings {
  allowances: SessionAllowance[];
}

export interface CreateSessionInput {
  sessionId: string;
  projectId: string;
  workspaceId: string;
  owner: CallerPrincipal;
  caller: CallerDeclaration | null;
  callerTimeoutMs: number;
  /** Default `stream`. */
  callerPresence?: CallerPresence;
  prompt: string | null;
  image: string | null;
  via: Via | null;
  /** How the project's host makes its container, and how this session's workspace begins there. */
  project: ProjectSpec;
  workspace: WorkspaceSetup;
  /** The agent to run, its model and the session's model budget (the project's max_cost_usd). */
  agent: SessionAgentSpec;
  /** The droid's key for Oubliette's tools (its environment), if it gets one. */
  droidKey: DroidKey | null;
  /** The session whose droid started this one, and this one's depth (absent: depth 0). */
  parent?: { sessionId: string; depth: number } | null;
  /** From the project's limits; 0 turns a rule off. */
  idleTimeoutMs: number;
  maxLifetimeMs: number;
  /** What the agent asks before acting (absent: nothing, as before approvals existed). */
  approvals?: ApprovalSettings;
  /** The project's setup, run in the workspace before the agent starts (when it has not yet). */
  setup?: SetupSpec | null;
  /** The session's own network policies (its ancestors', its spawn's), applied with its project's. */
  network?: NetworkPolicy[];
  /** Move the project to another host if its own is away (lost, revoked or not connected). */
  relocate?: boolean;
}

export interface SendMessageInput {
  principal: CallerPrincipal;
  message: string | null;
  caller: CallerDeclaration | null;
  /** A new `caller_presence` for the session (owner only); absent or null keeps it. */
  callerPresence?: CallerPresence | null;
  via: Via | null;
}

export interface RespondInput {
  principal: CallerPrincipal;
  requestId: string;
  result?: JsonValue;
  error?: unknown;
  via: Via | null;
}

/** A page of `session events`; events typed loosely (the recursive JSON type is too deep for RPC stub typing). */
export interface EventsPage {
  events: Record<string, unknown>[];
  next_index: number;
  status: string;
}

/** What the MCP session reports about its event stream. */
export type PresenceChange = "live" | "dropped" | "gone";
