/**
 * What a host remembers of a project between runs, in `project.json`: whether its workspaces are
 * isolated, and each workspace's stable index (its uid is ISOLATED_UID_BASE + index), so a
 * workspace keeps its owner across container restarts and host-agent upgrades.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import { parseJson } from "../../../protocol/json.js";

/** First uid of isolated workspaces; far from the image's users (droid is 1000). */
export const ISOLATED_UID_BASE = 20_000;
/** Most workspaces with their own uid per project. */
export const MAX_WORKSPACE_INDEX = 40_000;

const ProjectRecordSchema = z.object({
  isolation: z.boolean(),
  workspaces: z.record(z.string(), z.number().int().min(0).max(MAX_WORKSPACE_INDEX)),
});
export type ProjectRecord = z.infer<typeof ProjectRecordSchema>;

/** The record at `path`, or a fresh one when there is none (or it cannot be read as one). */
export async function readRecord(path: string): Promise<ProjectRecord> {
  const text = await readFile(path, "utf8").catch(() => null);
  const json = text === null ? null : parseJson(text);
  const parsed = ProjectRecordSchema.safeParse(json?.ok ? json.value : undefined);
  return parsed.success ? parsed.data : { isolation: false, workspaces: {} };
}

/** Writes the record atomically (a crash leaves the old one or the new one, never half). */
export async function writeRecord(path: string, record: ProjectRecord): Promise<void> {
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
}

/** The index of `workspaceId`, allocating the next free one (recorded by the caller). */
export function indexOf(record: ProjectRecord, workspaceId: string): number {
  const known = record.workspaces[workspaceId];
  if (known !== undefined) return known;
  const used = Object.values(record.workspaces);
  const next = used.length === 0 ? 0 : Math.max(...used) + 1;
  if (next > MAX_WORKSPACE_INDEX) throw new Error("this project has used up its workspace uids");
  record.workspaces[workspaceId] = next;
  return next;
}
