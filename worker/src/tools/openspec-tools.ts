import { z } from "zod";
import { WorkspaceReadResultSchema } from "../../../protocol/tunnel-projects.js";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { ARCHIVE, CHANGES_DIR, parseTasks, progress } from "../projects/openspec.js";
import { DEFAULT_WORKSPACE, ProjectIdSchema, WorkspaceIdSchema } from "../projects/project-config.js";
import { onProjectHost, TunnelMethod } from "../projects/project-host.js";
import { defineTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";

/** Most changes listed (each costs a read of its tasks.md). */
const MAX_CHANGES = 100;

const ChangeIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "change_id is a directory name under openspec/changes")
  .describe("The change (a directory under openspec/changes).");

/** Reads a path in a workspace on the project's host (paths are checked there to stay inside it). */
function read(env: Env, projectId: string, workspaceId: string, path: string, kind: "dir" | "file") {
  return onProjectHost(
    env,
    projectId,
    TunnelMethod.workspaceRead,
    { workspace_id: workspaceId, path, kind, max_bytes: 256 * 1024 },
    WorkspaceReadResultSchema,
  );
}

async function tasksOf(env: Env, projectId: string, workspaceId: string, changeId: string) {
  const file = await read(env, projectId, workspaceId, `${CHANGES_DIR}/${changeId}/tasks.md`, "file").catch(
    (err: unknown) => {
      if (err instanceof AppError && err.code === "not_found") return null;
      throw err;
    },
  );
  return file && "content" in file ? parseTasks(file.content) : null;
}

/** A change in a listing: how far it is, or why the host would not read it. */
interface ListedChange {
  change_id: string;
  archived: boolean;
  tasks: { done: number; total: number } | null;
  /** The host refused to read it (a symlink that leads out of the workspace, say): the reason. */
  refused?: string;
}

/**
 * The host refused the path (`invalid`: it leads out of the workspace, or is not what it should
 * be): that one entry is marked, the listing goes on. Anything else (no host, a host error) fails
 * the listing, as it would fail every entry.
 */
function refusedEntry(err: unknown): string {
  if (err instanceof AppError && err.code === "invalid_arguments") return err.message;
  throw err;
}

async function activeChange(
  env: Env,
  projectId: string,
  workspaceId: string,
  changeId: string,
): Promise<ListedChange> {
  const change: ListedChange = { change_id: changeId, archived: false, tasks: null };
  try {
    const tasks = await tasksOf(env, projectId, workspaceId, changeId);
    return { ...change, tasks: tasks ? progress(tasks) : null };
  } catch (err) {
    return { ...change, refused: refusedEntry(err) };
  }
}

async function archivedChanges(env: Env, projectId: string, workspaceId: string): Promise<ListedChange[]> {
  const archive = `${CHANGES_DIR}/${ARCHIVE}`;
  try {
    const listing = await read(env, projectId, workspaceId, archive, "dir");
    if (!("entries" in listing)) return [];
    return listing.entries
      .filter((e) => e.type === "dir")
      .slice(0, MAX_CHANGES)
      .map((e) => ({ change_id: `${ARCHIVE}/${e.name}`, archived: true, tasks: null }));
  } catch (err) {
    return [{ change_id: ARCHIVE, archived: true, tasks: null, refused: refusedEntry(err) }];
  }
}

export const projectChangesTool = defineTool({
  name: "project_changes",
  title: "OpenSpec changes of a project",
  description:
    "List the OpenSpec changes in a workspace (openspec/changes), with how many of their tasks are done. " +
    "A change the host will not read (a symlink that leads out of the workspace) is listed with `refused` and why.",
  action: {
    description: "List OpenSpec changes.",
    access: "read",
    target: "project",
    timing: "sync",
    example: { project_id: EXAMPLE_PROJECT },
    input: z.object({
      project_id: ProjectIdSchema,
      workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
      include_archived: z.boolean().default(false),
    }),
    async handler(args, ctx) {
      ctx.authorizeProject(args.project_id);
      const listing = await read(ctx.env, args.project_id, args.workspace_id, CHANGES_DIR, "dir").catch(
        (err: unknown) => {
          if (err instanceof AppError && err.code === "not_found") return { entries: [] };
          throw err;
        },
      );
      const dirs =
        "entries" in listing ? listing.entries.filter((e) => e.type === "dir").map((e) => e.name) : [];
      const active = dirs.filter((d) => d !== ARCHIVE).slice(0, MAX_CHANGES);
      const changes: ListedChange[] = await Promise.all(
        active.map((id) => activeChange(ctx.env, args.project_id, args.workspace_id, id)),
      );
      if (args.include_archived && dirs.includes(ARCHIVE))
        changes.push(...(await archivedChanges(ctx.env, args.project_id, args.workspace_id)));
      return {
        project_id: args.project_id,
        workspace_id: args.workspace_id,
        changes,
        truncated: dirs.length > MAX_CHANGES,
      };
    },
  },
});

export const projectTasksTool = defineTool({
  name: "project_tasks",
  title: "Tasks of an OpenSpec change",
  description:
    "The tasks of one OpenSpec change (its tasks.md): each with its section and whether it is done.",
  action: {
    description: "Get a change's tasks.",
    access: "read",
    target: "project",
    timing: "sync",
    example: { project_id: EXAMPLE_PROJECT, change_id: "add-billing-export" },
    input: z.object({
      project_id: ProjectIdSchema,
      change_id: ChangeIdSchema,
      workspace_id: WorkspaceIdSchema.default(DEFAULT_WORKSPACE),
    }),
    async handler(args, ctx) {
      ctx.authorizeProject(args.project_id);
      const tasks = await tasksOf(ctx.env, args.project_id, args.workspace_id, args.change_id);
      if (tasks === null)
        throw new AppError(
          "not_found",
          `change ${args.change_id} has no tasks.md in workspace ${args.workspace_id}`,
        );
      return { project_id: args.project_id, change_id: args.change_id, ...progress(tasks), tasks };
    },
  },
});
