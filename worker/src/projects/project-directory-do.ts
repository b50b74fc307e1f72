import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.js";
import { fail, ok, type Result } from "../errors.js";

/** A project as the directory lists it. */
export interface ProjectEntry {
  project_id: string;
  name: string;
  created_at: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS projects (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL
);
`;

/**
 * The list of projects and the guard of their unique names. Never on a relayed call's path:
 * only project create, list and delete come here.
 */
export class ProjectDirectoryDurableObject extends DurableObject<Env> {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(SCHEMA);
  }

  /** Takes the name for a new project; refuses a name in use. */
  async reserve(projectId: string, name: string): Promise<Result<ProjectEntry>> {
    const taken = this.#sql.exec("SELECT id FROM projects WHERE name = ?", name).toArray()[0];
    if (taken) return fail("conflict", `a project named ${name} already exists (${String(taken.id)})`);
    const now = Date.now();
    this.#sql.exec("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)", projectId, name, now);
    return ok({ project_id: projectId, name, created_at: new Date(now).toISOString() });
  }

  async remove(projectId: string): Promise<void> {
    this.#sql.exec("DELETE FROM projects WHERE id = ?", projectId);
  }

  async exists(projectId: string): Promise<boolean> {
    return this.#sql.exec("SELECT 1 FROM projects WHERE id = ?", projectId).toArray().length > 0;
  }

  /** Projects in creation order; `only` limits the list (a project-scoped token's projects). */
  async list(only: string[] | null): Promise<ProjectEntry[]> {
    const rows = this.#sql.exec("SELECT * FROM projects ORDER BY created_at, id").toArray();
    const wanted = only === null ? null : new Set(only);
    return rows
      .filter((r) => wanted === null || wanted.has(String(r.id)))
      .map((r) => ({
        project_id: String(r.id),
        name: String(r.name),
        created_at: new Date(Number(r.created_at)).toISOString(),
      }));
  }
}
