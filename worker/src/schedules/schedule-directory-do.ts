import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import type { Env } from "../env.js";
import { capture, type Result } from "../errors.js";
import { decodeCursor, encodeCursor } from "../objects/cursor.js";
import { decodeRecord, type RecordFormat } from "../objects/stored-record.js";

const ProjectIdsSchema = z.array(z.string());

/** A row's projects (JSON text, bare: version 0): parsed, never cast. */
const PROJECT_IDS = {
  kind: "schedule directory projects",
  version: 0,
  schema: ProjectIdsSchema,
} satisfies RecordFormat<typeof ProjectIdsSchema>;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, projects TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS schedules_order ON schedules (created_at, id);
`;

export interface DirectoryPage {
  schedule_ids: string[];
  next_cursor: string | null;
}

/**
 * Which schedules exist and which projects each targets, for `schedule list`; each schedule's
 * own object holds everything else. Only schedule create, update (of targets), delete and list
 * come here, never a run.
 */
export class ScheduleDirectoryDurableObject extends DurableObject<Env> {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(SCHEMA);
  }

  async add(scheduleId: string, projects: string[], createdAt: number): Promise<void> {
    this.#sql.exec(
      "INSERT OR REPLACE INTO schedules (id, created_at, projects) VALUES (?, ?, ?)",
      scheduleId,
      createdAt,
      JSON.stringify(projects),
    );
  }

  async setProjects(scheduleId: string, projects: string[]): Promise<void> {
    this.#sql.exec("UPDATE schedules SET projects = ? WHERE id = ?", JSON.stringify(projects), scheduleId);
  }

  async remove(scheduleId: string): Promise<void> {
    this.#sql.exec("DELETE FROM schedules WHERE id = ?", scheduleId);
  }

  /**
   * Schedules in creation order whose projects all lie in `only` (null: any) and, when
   * `projectId` is given, that target it.
   */
  async list(input: {
    only: string[] | null;
    projectId: string | null;
    cursor: string | null;
    limit: number;
  }): Promise<Result<DirectoryPage>> {
    return capture(() => this.#list(input));
  }

  #list(input: { only: string[] | null; projectId: string | null; cursor: string | null; limit: number }) {
    const after = input.cursor === null ? { createdAt: -1, id: "" } : decodeCursor(input.cursor);
    const only = input.only === null ? null : new Set(input.only);
    const rows = this.#sql
      .exec(
        "SELECT * FROM schedules WHERE created_at > ? OR (created_at = ? AND id > ?) ORDER BY created_at, id",
        after.createdAt,
        after.createdAt,
        after.id,
      )
      .toArray();
    const page: { id: string; createdAt: number }[] = [];
    for (const row of rows) {
      const projects = decodeRecord(PROJECT_IDS, String(row.projects));
      if (only !== null && !projects.every((p) => only.has(p))) continue;
      if (input.projectId !== null && !projects.includes(input.projectId)) continue;
      page.push({ id: String(row.id), createdAt: Number(row.created_at) });
      if (page.length > input.limit) break;
    }
    const shown = page.slice(0, input.limit);
    const last = shown.at(-1);
    return {
      schedule_ids: shown.map((s) => s.id),
      next_cursor: page.length > input.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    };
  }
}
