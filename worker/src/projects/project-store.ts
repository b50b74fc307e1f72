import { type ProjectConfig, storedConfig } from "./project-config.js";

/**
 * A project object's tables: the project row (config), its session index and its workspaces.
 * Sessions are indexed here so `session list` never scans session objects.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS project (
  id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL,
  host_id TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, status TEXT NOT NULL,
  owner_token_id TEXT NOT NULL, external_id TEXT, source TEXT,
  created_at INTEGER NOT NULL, ended_at INTEGER, end_reason TEXT
);
CREATE INDEX IF NOT EXISTS sessions_created ON sessions (created_at, session_id);
CREATE INDEX IF NOT EXISTS sessions_workspace ON sessions (workspace_id, status);
CREATE TABLE IF NOT EXISTS workspaces (
  workspace_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, is_default INTEGER NOT NULL,
  origin TEXT NOT NULL
);
`;

export type IndexedStatus = "starting" | "running" | "exited" | "failed" | "ended" | "lost";
export const LIVE_STATUSES: readonly IndexedStatus[] = ["starting", "running"];

export interface ProjectRow {
  id: string;
  config: ProjectConfig;
  createdAt: number;
  createdBy: string;
  hostId: string | null;
}

export interface SessionEntry {
  sessionId: string;
  workspaceId: string;
  status: IndexedStatus;
  ownerTokenId: string;
  externalId: string | null;
  source: string | null;
  createdAt: number;
  endedAt: number | null;
  endReason: string | null;
}

export interface WorkspaceEntry {
  workspaceId: string;
  createdAt: number;
  isDefault: boolean;
  /** How it began: git init, cloned from the project's remote_url, or an empty directory. */
  origin: "init" | "clone" | "empty";
}

type Cell = SqlStorageValue | undefined;
const str = (v: Cell) => (v === null || v === undefined ? null : String(v));

function toSession(r: Record<string, SqlStorageValue>): SessionEntry {
  return {
    sessionId: String(r.session_id),
    workspaceId: String(r.workspace_id),
    status: String(r.status) as IndexedStatus,
    ownerTokenId: String(r.owner_token_id),
    externalId: str(r.external_id),
    source: str(r.source),
    createdAt: Number(r.created_at),
    endedAt: r.ended_at === null || r.ended_at === undefined ? null : Number(r.ended_at),
    endReason: str(r.end_reason),
  };
}

function toWorkspace(r: Record<string, SqlStorageValue>): WorkspaceEntry {
  return {
    workspaceId: String(r.workspace_id),
    createdAt: Number(r.created_at),
    isDefault: Number(r.is_default) === 1,
    origin: String(r.origin) as WorkspaceEntry["origin"],
  };
}

export class ProjectStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  project(): ProjectRow | null {
    const r = this.#sql.exec("SELECT * FROM project LIMIT 1").toArray()[0];
    if (!r) return null;
    return {
      id: String(r.id),
      config: storedConfig(String(r.config)),
      createdAt: Number(r.created_at),
      createdBy: String(r.created_by),
      hostId: str(r.host_id),
    };
  }

  createProject(row: ProjectRow): void {
    this.#sql.exec(
      "INSERT INTO project (id, config, created_at, created_by, host_id) VALUES (?, ?, ?, ?, ?)",
      row.id,
      JSON.stringify(row.config),
      row.createdAt,
      row.createdBy,
      row.hostId,
    );
  }

  setConfig(config: ProjectConfig): void {
    this.#sql.exec("UPDATE project SET config = ?", JSON.stringify(config));
  }

  setHost(hostId: string | null): void {
    this.#sql.exec("UPDATE project SET host_id = ?", hostId);
  }

  /** Forgets the project (it was deleted): every row goes, the tables stay for the object's next use. */
  wipe(): void {
    this.#sql.exec("DELETE FROM project; DELETE FROM sessions; DELETE FROM workspaces;");
  }

  // ---- sessions

  addSession(entry: SessionEntry): void {
    this.#sql.exec(
      `INSERT INTO sessions (session_id, workspace_id, status, owner_token_id, external_id, source, created_at, ended_at, end_reason)
       VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)`,
      entry.sessionId,
      entry.workspaceId,
      entry.status,
      entry.ownerTokenId,
      entry.externalId,
      entry.source,
      entry.createdAt,
    );
  }

  session(sessionId: string): SessionEntry | null {
    const r = this.#sql.exec("SELECT * FROM sessions WHERE session_id = ?", sessionId).toArray()[0];
    return r ? toSession(r) : null;
  }

  setSessionStatus(
    sessionId: string,
    status: IndexedStatus,
    endedAt: number | null,
    reason: string | null,
  ): void {
    this.#sql.exec(
      "UPDATE sessions SET status = ?, ended_at = COALESCE(ended_at, ?), end_reason = COALESCE(end_reason, ?) WHERE session_id = ?",
      status,
      endedAt,
      reason,
      sessionId,
    );
  }

  liveSessions(workspaceId?: string): SessionEntry[] {
    const rows =
      workspaceId === undefined
        ? this.#sql.exec("SELECT * FROM sessions WHERE status IN ('starting', 'running') ORDER BY created_at")
        : this.#sql.exec(
            "SELECT * FROM sessions WHERE workspace_id = ? AND status IN ('starting', 'running') ORDER BY created_at DESC",
            workspaceId,
          );
    return rows.toArray().map(toSession);
  }

  /** One page of sessions, oldest first, after the (created_at, session_id) cursor. */
  listSessions(filter: {
    status: IndexedStatus | null;
    ownerTokenId: string | null;
    after: { createdAt: number; sessionId: string } | null;
    limit: number;
  }): SessionEntry[] {
    const where: string[] = [];
    const params: SqlStorageValue[] = [];
    if (filter.status !== null) {
      where.push("status = ?");
      params.push(filter.status);
    }
    if (filter.ownerTokenId !== null) {
      where.push("owner_token_id = ?");
      params.push(filter.ownerTokenId);
    }
    if (filter.after !== null) {
      where.push("(created_at > ? OR (created_at = ? AND session_id > ?))");
      params.push(filter.after.createdAt, filter.after.createdAt, filter.after.sessionId);
    }
    const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
    return this.#sql
      .exec(
        `SELECT * FROM sessions ${clause} ORDER BY created_at, session_id LIMIT ?`,
        ...params,
        filter.limit,
      )
      .toArray()
      .map(toSession);
  }

  /** Ended sessions that ended before `cutoff` (epoch ms). */
  endedBefore(cutoff: number): SessionEntry[] {
    return this.#sql
      .exec("SELECT * FROM sessions WHERE status NOT IN ('starting', 'running') AND ended_at < ?", cutoff)
      .toArray()
      .map(toSession);
  }

  removeSession(sessionId: string): void {
    this.#sql.exec("DELETE FROM sessions WHERE session_id = ?", sessionId);
  }

  countSessions(): { total: number; live: number } {
    const r = this.#sql
      .exec(
        "SELECT COUNT(*) AS total, SUM(CASE WHEN status IN ('starting', 'running') THEN 1 ELSE 0 END) AS live FROM sessions",
      )
      .one();
    return { total: Number(r.total), live: Number(r.live ?? 0) };
  }

  // ---- workspaces

  addWorkspace(entry: WorkspaceEntry): void {
    this.#sql.exec(
      "INSERT OR IGNORE INTO workspaces (workspace_id, created_at, is_default, origin) VALUES (?, ?, ?, ?)",
      entry.workspaceId,
      entry.createdAt,
      entry.isDefault ? 1 : 0,
      entry.origin,
    );
  }

  workspace(workspaceId: string): WorkspaceEntry | null {
    const r = this.#sql.exec("SELECT * FROM workspaces WHERE workspace_id = ?", workspaceId).toArray()[0];
    return r ? toWorkspace(r) : null;
  }

  workspaces(): WorkspaceEntry[] {
    return this.#sql
      .exec("SELECT * FROM workspaces ORDER BY created_at, workspace_id")
      .toArray()
      .map(toWorkspace);
  }

  removeWorkspace(workspaceId: string): void {
    this.#sql.exec("DELETE FROM workspaces WHERE workspace_id = ?", workspaceId);
  }
}
