import { callObject } from "./api.js";
import { type JsonRecord, list, num, rec, str } from "./json.js";

/**
 * What the console reads of projects and sessions (worker/src/projects/project-do.ts,
 * session/session-views.ts), narrowed from the tools' answers.
 */
export interface ProjectEntry {
  project_id: string;
  name: string;
  created_at: string | null;
}

export interface SessionListing {
  session_id: string;
  project_id: string;
  workspace_id: string | null;
  status: string;
  created_at: string | null;
  ended_at: string | null;
  end_reason: string | null;
}

export interface SessionInfo {
  session_id: string;
  project_id: string;
  status: string;
  agent: string | null;
  model: string | null;
  host_id: string | null;
  cost_usd: number | null;
  pending: number;
}

export function parseProject(r: JsonRecord): ProjectEntry | null {
  const id = str(r, "project_id");
  return id === null
    ? null
    : { project_id: id, name: str(r, "name") ?? id, created_at: str(r, "created_at") };
}

export function parseListing(r: JsonRecord): SessionListing | null {
  const id = str(r, "session_id");
  const project = str(r, "project_id");
  if (id === null || project === null) return null;
  return {
    session_id: id,
    project_id: project,
    workspace_id: str(r, "workspace_id"),
    status: str(r, "status") ?? "unknown",
    created_at: str(r, "created_at"),
    ended_at: str(r, "ended_at"),
    end_reason: str(r, "end_reason"),
  };
}

export function parseInfo(r: JsonRecord): SessionInfo | null {
  const id = str(r, "session_id");
  const project = str(r, "project_id");
  if (id === null || project === null) return null;
  const usage = rec(r, "usage");
  return {
    session_id: id,
    project_id: project,
    status: str(r, "status") ?? "unknown",
    agent: str(r, "agent"),
    model: str(r, "model"),
    host_id: str(r, "host_id"),
    cost_usd: usage ? num(usage, "cost_usd") : null,
    pending: (num(r, "pending_caller_requests") ?? 0) + (num(r, "pending_approvals") ?? 0),
  };
}

export function isLive(status: string): boolean {
  return status === "starting" || status === "running";
}

export async function listProjects(): Promise<ProjectEntry[]> {
  return list(await callObject("project", { action: "list" }), "projects", parseProject);
}

/** Pages read per project: `session list` is oldest first, and the newest are the ones to show. */
const MAX_PAGES = 5;

/** A project's sessions (up to MAX_PAGES pages of 200), newest first. */
export async function projectSessions(projectId: string): Promise<SessionListing[]> {
  const sessions: SessionListing[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const args: JsonRecord = { action: "list", project_id: projectId, limit: 200 };
    if (cursor !== null) args.cursor = cursor;
    const answer = await callObject("session", args);
    sessions.push(...list(answer, "sessions", parseListing));
    cursor = str(answer, "next_cursor");
    if (cursor === null) break;
  }
  return sessions.sort((a, b) => (b.created_at ?? "").localeCompare(a.created_at ?? ""));
}

export async function sessionInfo(sessionId: string): Promise<SessionInfo | null> {
  return parseInfo(await callObject("session", { action: "get", session_id: sessionId }));
}
