import { DurableObject } from "cloudflare:workers";
import type { Target } from "../auth/scopes.js";
import type { Env } from "../env.js";
import { capture, type Result } from "../errors.js";
import { decodeCursor, encodeCursor } from "../objects/cursor.js";
import type { JobStatus } from "./job-record.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, project_id TEXT, target TEXT NOT NULL, status TEXT NOT NULL,
  created_at INTEGER NOT NULL, expires_at INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_order ON jobs (created_at DESC, id DESC);
`;

/** A job as the directory lists it (`job get` tells the rest). */
export interface JobEntry {
  jobId: string;
  projectId: string | null;
  target: Target;
  status: JobStatus;
  createdAt: number;
  expiresAt: number | null;
}

export interface JobListQuery {
  /** Only jobs of these projects (null: any); `global` adds jobs that name no project. */
  projects: string[] | null;
  global: boolean;
  status: JobStatus | null;
  /** The previous page's `next_cursor`. */
  cursor: string | null;
  limit: number;
}

/**
 * Which jobs exist, whose they are and their status, for `job list` (`status=failed` finds the
 * failures). Each job's object tells it when it starts, changes status and is forgotten; rows past
 * their expiry are dropped as others are written and never listed, so nothing polls.
 */
export class JobDirectoryDurableObject extends DurableObject<Env> {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(SCHEMA);
  }

  async put(entry: JobEntry): Promise<void> {
    this.#sql.exec("DELETE FROM jobs WHERE expires_at IS NOT NULL AND expires_at <= ?", Date.now());
    this.#sql.exec(
      "INSERT OR REPLACE INTO jobs (id, project_id, target, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      entry.jobId,
      entry.projectId,
      entry.target,
      entry.status,
      entry.createdAt,
      entry.expiresAt,
    );
  }

  async remove(jobId: string): Promise<void> {
    this.#sql.exec("DELETE FROM jobs WHERE id = ?", jobId);
  }

  /** Newest first; `next_cursor` pages on. */
  async list(query: JobListQuery): Promise<Result<{ jobs: JobEntry[]; next_cursor: string | null }>> {
    return capture(() => this.#list(query));
  }

  #list(query: JobListQuery) {
    const only = query.projects === null ? null : new Set(query.projects);
    const before =
      query.cursor === null ? { createdAt: Number.MAX_SAFE_INTEGER, id: "" } : decodeCursor(query.cursor);
    const rows = this.#sql
      .exec(
        `SELECT * FROM jobs WHERE (expires_at IS NULL OR expires_at > ?)
         AND (created_at < ? OR (created_at = ? AND id < ?))
         AND (? IS NULL OR status = ?) ORDER BY created_at DESC, id DESC`,
        Date.now(),
        before.createdAt,
        before.createdAt,
        before.id,
        query.status,
        query.status,
      )
      .toArray();
    const jobs: JobEntry[] = [];
    for (const row of rows) {
      const projectId = row.project_id === null ? null : String(row.project_id);
      const visible = projectId === null ? query.global : only === null || only.has(projectId);
      if (!visible) continue;
      jobs.push({
        jobId: String(row.id),
        projectId,
        target: String(row.target) as Target,
        status: String(row.status) as JobStatus,
        createdAt: Number(row.created_at),
        expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      });
      if (jobs.length > query.limit) break;
    }
    const shown = jobs.slice(0, query.limit);
    const last = shown.at(-1);
    return {
      jobs: shown,
      next_cursor: jobs.length > query.limit && last ? encodeCursor(last.createdAt, last.jobId) : null,
    };
  }
}
