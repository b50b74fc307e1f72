/**
 * What a host remembers of a project between runs, in `project.json`: whether its workspaces are
 * isolated, each workspace's stable index (its group is derived from it), and each session's
 * index (its uid is derived from it), so identities survive container restarts and host-agent
 * upgrades. The file is a stored wire shape: parsed by a schema, versioned, migrated in one place.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import { Identities } from "../../../protocol/container-layout.js";
import { DevcontainerEnvironmentSchema } from "../../../protocol/devcontainer.js";
import { parseJson } from "../../../protocol/json.js";
import { NetworkPolicySchema } from "../../../protocol/network.js";

const RECORD_VERSION = 2;

const ProjectRecordSchema = z.object({
  version: z.literal(RECORD_VERSION),
  isolation: z.boolean(),
  workspaces: z.record(z.string(), z.number().int().min(0).max(Identities.maxWorkspaceIndex)),
  /** Sessions that run (or ran and may be re-adopted) here, and their uid index. */
  sessions: z.record(z.string(), z.number().int().min(0)),
  /** The next session index to hand out (never reused while the count lasts). */
  next_session: z.number().int().min(0),
  /** The disk bound the project's volume was made with (MiB), in filesystem mode. */
  disk_mb: z.number().int().positive().optional(),
  /** Workspaces started on a branch of their own: the branch and the commit it started from. */
  branches: z
    .record(z.string(), z.object({ name: z.string(), base_commit: z.string().nullable() }))
    .optional(),
  /** The project's remote, as its last session was started with (its agents' own pushes go there). */
  git: z.object({ remote_url: z.string(), git_credential: z.string().optional() }).optional(),
  /** The project's network policies as its latest spec gave them (a restarted host-agent's gate applies them). */
  network: z.object({ network: NetworkPolicySchema, setup_network: NetworkPolicySchema }).optional(),
  /**
   * The default workspace's devcontainer.json as the container was last made from it (environment
   * "devcontainer"): its setup steps run before the project's, after a restart of this host-agent too.
   */
  devcontainer: DevcontainerEnvironmentSchema.optional(),
  /**
   * The image the container was made from, when it is not one of ours: its reference and id. A
   * container made again from the same reference uses that id (the same bytes), until
   * `image_rebuild` takes the reference's current image.
   */
  image: z.object({ ref: z.string(), id: z.string() }).optional(),
  /** Each workspace's last setup: for which steps (their hash), and how it ended. */
  setups: z
    .record(
      z.string(),
      z.object({
        hash: z.string(),
        status: z.enum(["ok", "failed"]),
        message: z.string(),
        at: z.string(),
      }),
    )
    .optional(),
});
export type ProjectRecord = z.infer<typeof ProjectRecordSchema>;

/** Version 1: no version field, no sessions (agents ran as the workspaces' uids). */
const RecordV1Schema = z.object({
  isolation: z.boolean(),
  workspaces: z.record(z.string(), z.number().int().min(0)),
});

function fresh(): ProjectRecord {
  return { version: RECORD_VERSION, isolation: false, workspaces: {}, sessions: {}, next_session: 0 };
}

/** Reads any known version into the current one; an unreadable file is a fresh record. */
export function migrateRecord(value: unknown): ProjectRecord {
  const current = ProjectRecordSchema.safeParse(value);
  if (current.success) return current.data;
  const v1 = RecordV1Schema.safeParse(value);
  if (v1.success) {
    const workspaces = Object.fromEntries(
      Object.entries(v1.data.workspaces).filter(([, index]) => index <= Identities.maxWorkspaceIndex),
    );
    return { ...fresh(), isolation: v1.data.isolation, workspaces };
  }
  return fresh();
}

/** The record at `path`, or a fresh one when there is none (or it cannot be read as one). */
export async function readRecord(path: string): Promise<ProjectRecord> {
  const text = await readFile(path, "utf8").catch(() => null);
  const json = text === null ? null : parseJson(text);
  return migrateRecord(json?.ok ? json.value : undefined);
}

/** Writes the record atomically (a crash leaves the old one or the new one, never half). */
export async function writeRecord(path: string, record: ProjectRecord): Promise<void> {
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
}

/** The index of `workspaceId`, allocating the next free one (recorded by the caller). */
export function workspaceIndex(record: ProjectRecord, workspaceId: string): number {
  const known = record.workspaces[workspaceId];
  if (known !== undefined) return known;
  const used = Object.values(record.workspaces);
  const next = used.length === 0 ? 0 : Math.max(...used) + 1;
  if (next > Identities.maxWorkspaceIndex) throw new Error("this project has used up its workspace groups");
  record.workspaces[workspaceId] = next;
  return next;
}

/**
 * The index of `sessionId`, allocating the next one (recorded by the caller). An index whose uid
 * a live session holds is skipped, so two sessions never share a uid even after the count wraps.
 */
export function sessionIndex(record: ProjectRecord, sessionId: string): number {
  const known = record.sessions[sessionId];
  if (known !== undefined) return known;
  const live = new Set(Object.values(record.sessions).map((i) => i % Identities.sessionUidCount));
  if (live.size >= Identities.sessionUidCount) throw new Error("this project runs too many sessions");
  let next = record.next_session;
  while (live.has(next % Identities.sessionUidCount)) next += 1;
  record.sessions[sessionId] = next;
  record.next_session = next + 1;
  return next;
}
