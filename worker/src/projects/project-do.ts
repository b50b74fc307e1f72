import { DurableObject } from "cloudflare:workers";
import { allowEntry, normalizeHost } from "../../../protocol/network.js";
import { TunnelMethods } from "../../../protocol/tunnel.js";
import type { UsageTotals } from "../../../protocol/usage.js";
import { randomHex } from "../auth/digest.js";
import type { Env } from "../env.js";
import { AppError, capture, fail, ok, type Result } from "../errors.js";
import { createLog, errorMessage } from "../log.js";
import { decodeCursor, encodeCursor } from "../objects/cursor.js";
import { objects } from "../objects/keys.js";
import {
  configProblem,
  DEFAULT_WORKSPACE,
  type Limits,
  type ProjectConfig,
  ProjectConfigSchema,
  type ProjectUpdate,
} from "./project-config.js";
import { type IndexedStatus, ProjectStore, type SessionEntry, type WorkspaceEntry } from "./project-store.js";
import { type DayUsageRow, type SessionUsageRow, UsageStore } from "./usage-store.js";

export interface ProjectInfo extends Omit<ProjectConfig, "name"> {
  project_id: string;
  name: string;
  created_at: string;
  created_by: string;
  host_id: string | null;
  sessions: { total: number; running: number };
  workspaces: number;
}

export interface SessionListing {
  session_id: string;
  project_id: string;
  workspace_id: string;
  status: IndexedStatus;
  owner_token_id: string;
  external_id: string | null;
  source: string | null;
  created_at: string;
  ended_at: string | null;
  end_reason: string | null;
}

export interface WorkspaceListing {
  workspace_id: string;
  default: boolean;
  origin: WorkspaceEntry["origin"];
  created_at: string;
  running_sessions: string[];
}

/** Where a spawn goes: an already running session of the workspace, or a new one. */
export type SessionPlan =
  | { kind: "resume"; sessionId: string; workspaceId: string }
  | { kind: "new"; sessionId: string; workspaceId: string; config: ProjectConfig };

export interface OpenSessionInput {
  sessionId: string;
  workspaceId: string | null;
  createWorkspace: boolean;
  newSession: boolean;
  ownerTokenId: string;
  externalId: string | null;
  source: string | null;
}

/** An index entry whose session object still does not exist after this long never started. */
const NEVER_STARTED_MS = 60_000;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function listing(projectId: string, s: SessionEntry): SessionListing {
  return {
    session_id: s.sessionId,
    project_id: projectId,
    workspace_id: s.workspaceId,
    status: s.status,
    owner_token_id: s.ownerTokenId,
    external_id: s.externalId,
    source: s.source,
    created_at: new Date(s.createdAt).toISOString(),
    ended_at: iso(s.endedAt),
    end_reason: s.endReason,
  };
}

/** A project's model usage over a period (see UsageStore). */
export interface ProjectUsage {
  by_day: DayUsageRow[];
  sessions: (SessionUsageRow & { status: string | null; created_at: string | null })[];
}

/**
 * One per project: its config, the index of its sessions (which workspace, status, owner) and its
 * workspaces. Session objects report their status changes here; anything that depends on "is a
 * session running" asks the session objects again first, so a lost report never blocks a delete.
 */
export class ProjectDurableObject extends DurableObject<Env> {
  readonly #store: ProjectStore;
  readonly #usage: UsageStore;
  readonly #log = createLog({ component: "project" });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new ProjectStore(ctx.storage.sql);
    this.#usage = new UsageStore(ctx.storage.sql);
  }

  async init(input: {
    projectId: string;
    config: ProjectConfig;
    createdBy: string;
  }): Promise<Result<ProjectInfo>> {
    if (this.#store.project()) return fail("conflict", `project ${input.projectId} already exists`);
    const now = Date.now();
    this.#store.createProject({
      id: input.projectId,
      config: input.config,
      createdAt: now,
      createdBy: input.createdBy,
      hostId: null,
    });
    const origin = input.config.remote_url ? "clone" : input.config.init_git ? "init" : "empty";
    this.#store.addWorkspace({ workspaceId: DEFAULT_WORKSPACE, createdAt: now, isDefault: true, origin });
    return ok(this.#info());
  }

  async info(): Promise<Result<ProjectInfo>> {
    return capture(() => this.#info());
  }

  /**
   * Changes what `project update` may change; the whole config is checked again before anything
   * is written, so a bad value changes nothing. The project's host hears of new network policies.
   */
  async update(patch: ProjectUpdate): Promise<Result<ProjectInfo>> {
    return capture(() => {
      const project = this.#require();
      const next = ProjectConfigSchema.safeParse({ ...project.config, ...patch });
      if (!next.success)
        throw new AppError("invalid_arguments", next.error.issues[0]?.message ?? "invalid config");
      const problem = configProblem(next.data);
      if (problem) throw new AppError("invalid_arguments", problem);
      this.#store.setConfig(next.data);
      if (patch.network !== undefined || patch.setup_network !== undefined) this.#pushNetwork(next.data);
      return this.#info();
    });
  }

  /**
   * An `allow_project` answer to a network request: `host:port` joins the allowlist (a project
   * whose network is not an allowlist is left as it is: nothing there asks). Idempotent.
   */
  async allowNetworkHost(input: {
    host: string;
    port: number;
  }): Promise<Result<{ added: boolean; entry: string }>> {
    return capture(() => {
      const project = this.#require();
      const entry = allowEntry(normalizeHost(input.host), input.port);
      const network = project.config.network;
      if (network.mode !== "allowlist" || network.allow.includes(entry)) return { added: false, entry };
      const config = { ...project.config, network: { ...network, allow: [...network.allow, entry] } };
      const checked = ProjectConfigSchema.safeParse(config);
      if (!checked.success)
        throw new AppError("invalid_arguments", `cannot add ${entry}: ${checked.error.issues[0]?.message}`);
      this.#store.setConfig(checked.data);
      this.#pushNetwork(checked.data);
      return { added: true, entry };
    });
  }

  async limits(): Promise<Result<Limits>> {
    return capture(() => this.#require().config.limits);
  }

  /**
   * Chooses the workspace and whether a spawn resumes the workspace's running session or starts
   * a new one; a new one is indexed (status starting) before its session object exists.
   */
  async openSession(input: OpenSessionInput): Promise<Result<SessionPlan>> {
    return capture(async () => {
      const project = this.#require();
      const workspaceId = this.#workspaceFor(input.workspaceId, input.createWorkspace);
      if (!input.newSession) {
        await this.#refreshLive();
        const running = this.#store.liveSessions(workspaceId)[0];
        if (running) return { kind: "resume", sessionId: running.sessionId, workspaceId } as const;
      }
      this.#store.addSession({
        sessionId: input.sessionId,
        workspaceId,
        status: "starting",
        ownerTokenId: input.ownerTokenId,
        externalId: input.externalId,
        source: input.source,
        createdAt: Date.now(),
        endedAt: null,
        endReason: null,
      });
      return { kind: "new", sessionId: input.sessionId, workspaceId, config: project.config } as const;
    });
  }

  /** The sessions running (or starting) now, asked of their session objects. */
  async liveSessions(): Promise<Result<string[]>> {
    return capture(async () => {
      this.#require();
      await this.#refreshLive();
      return this.#store.liveSessions().map((s) => s.sessionId);
    });
  }

  /** A session object reports a status change. */
  async sessionStatus(input: {
    sessionId: string;
    status: IndexedStatus;
    reason: string | null;
  }): Promise<void> {
    if (!this.#store.session(input.sessionId)) return;
    const ended = input.status !== "starting" && input.status !== "running";
    this.#store.setSessionStatus(input.sessionId, input.status, ended ? Date.now() : null, input.reason);
  }

  /** A session object reports its model usage (cumulative totals). */
  async sessionUsage(input: {
    sessionId: string;
    agent: string | null;
    model: string | null;
    totals: UsageTotals;
  }): Promise<void> {
    if (!this.#store.session(input.sessionId)) return;
    this.#usage.record(input.sessionId, input.agent, input.model, input.totals, Date.now());
  }

  /** Model usage from `sinceDay` (UTC, `YYYY-MM-DD`) on: per day, and per session (most costly first). */
  async usage(sinceDay: string, limit: number): Promise<Result<ProjectUsage>> {
    return capture(() => {
      this.#require();
      return {
        by_day: this.#usage.byDay(sinceDay),
        sessions: this.#usage.bySession(sinceDay, limit).map((row) => {
          const entry = this.#store.session(row.session_id);
          return {
            ...row,
            status: entry?.status ?? null,
            created_at: entry ? new Date(entry.createdAt).toISOString() : null,
          };
        }),
      };
    });
  }

  async session(sessionId: string): Promise<SessionListing | null> {
    const project = this.#store.project();
    const entry = this.#store.session(sessionId);
    return project && entry ? listing(project.id, entry) : null;
  }

  async listSessions(input: {
    status: IndexedStatus | null;
    ownerTokenId: string | null;
    cursor: string | null;
    limit: number;
  }): Promise<Result<{ sessions: SessionListing[]; next_cursor: string | null }>> {
    return capture(() => {
      const project = this.#require();
      const position = input.cursor === null ? null : decodeCursor(input.cursor);
      const after = position && { createdAt: position.createdAt, sessionId: position.id };
      const rows = this.#store.listSessions({
        status: input.status,
        ownerTokenId: input.ownerTokenId,
        after,
        limit: input.limit + 1,
      });
      const page = rows.slice(0, input.limit);
      const last = page.at(-1);
      const more = rows.length > input.limit && last !== undefined;
      return {
        sessions: page.map((s) => listing(project.id, s)),
        next_cursor: more ? encodeCursor(last.createdAt, last.sessionId) : null,
      };
    });
  }

  /** Forgets ended sessions older than `maxAgeHours`; returns their ids (their objects are purged by the caller). */
  async cleanup(maxAgeHours: number): Promise<Result<string[]>> {
    return capture(() => {
      this.#require();
      const old = this.#store.endedBefore(Date.now() - maxAgeHours * 3_600_000);
      for (const s of old) this.#store.removeSession(s.sessionId);
      return old.map((s) => s.sessionId);
    });
  }

  async listWorkspaces(): Promise<Result<WorkspaceListing[]>> {
    return capture(async () => {
      this.#require();
      await this.#refreshLive();
      const live = this.#store.liveSessions();
      return this.#store.workspaces().map((w) => ({
        workspace_id: w.workspaceId,
        default: w.isDefault,
        origin: w.origin,
        created_at: new Date(w.createdAt).toISOString(),
        running_sessions: live.filter((s) => s.workspaceId === w.workspaceId).map((s) => s.sessionId),
      }));
    });
  }

  /** Deletes a workspace from the index; `check` only says whether it may be deleted. */
  async deleteWorkspace(
    workspaceId: string,
    check = false,
  ): Promise<Result<{ workspace_id: string; deleted: true }>> {
    return capture(async () => {
      this.#require();
      const workspace = this.#store.workspace(workspaceId);
      if (!workspace) throw new AppError("not_found", `no workspace ${workspaceId} in this project`);
      if (workspace.isDefault) throw new AppError("conflict", "the default workspace cannot be deleted");
      await this.#refreshLive();
      const running = this.#store.liveSessions(workspaceId);
      if (running.length > 0) {
        throw new AppError(
          "conflict",
          `workspace ${workspaceId} is used by running session ${running.map((s) => s.sessionId).join(", ")}; end it first`,
        );
      }
      if (!check) this.#store.removeWorkspace(workspaceId);
      return { workspace_id: workspaceId, deleted: true as const };
    });
  }

  /**
   * Deletes the project: refuses while sessions run unless `force`, which ends them first. The
   * object's rows are wiped; the caller removes the directory entry and the project's tokens.
   */
  async delete(input: {
    force: boolean;
    by: string;
  }): Promise<Result<{ project_id: string; ended_sessions: string[] }>> {
    return capture(async () => {
      const project = this.#require();
      await this.#refreshLive();
      const live = this.#store.liveSessions();
      if (live.length > 0 && !input.force) {
        throw new AppError(
          "conflict",
          `project ${project.id} has ${live.length} running session(s) (${live.map((s) => s.sessionId).join(", ")}); end them or delete with force: true`,
        );
      }
      const reason = `project ${project.id} was deleted by ${input.by}`;
      await Promise.all(live.map((s) => objects.session(this.env, s.sessionId).terminate(reason)));
      this.#log.info("project deleted", { project: project.id, ended: live.length });
      this.#store.wipe();
      this.#usage.wipe();
      return { project_id: project.id, ended_sessions: live.map((s) => s.sessionId) };
    });
  }

  // ------------------------------------------------------------------ private

  /** Tells the project's host (if it has one and it is connected) its new network policies; best effort. */
  #pushNetwork(config: ProjectConfig): void {
    const projectId = this.#require().id;
    this.ctx.waitUntil(
      objects
        .hostRegistry(this.env)
        .projectRequest({
          projectId,
          method: TunnelMethods.projectNetwork.name,
          params: { network: config.network, setup_network: config.setup_network },
        })
        .then((sent) => {
          if (!sent.ok)
            this.#log.info("the project's host did not take its network policies now", {
              error: sent.error.message,
            });
        })
        .catch((err: unknown) =>
          this.#log.warn("could not tell the host the project's network", { error: errorMessage(err) }),
        ),
    );
  }

  #require() {
    const project = this.#store.project();
    if (!project) throw new AppError("not_found", "project not found");
    return project;
  }

  #workspaceFor(requested: string | null, create: boolean): string {
    if (requested === null && !create) return DEFAULT_WORKSPACE;
    const workspaceId = requested ?? `ws-${randomHex(6)}`;
    if (this.#store.workspace(workspaceId)) {
      if (create && requested !== null) {
        throw new AppError(
          "conflict",
          `workspace ${workspaceId} already exists; omit create_workspace to use it`,
        );
      }
      return workspaceId;
    }
    if (!create) {
      throw new AppError(
        "not_found",
        `no workspace ${workspaceId} in this project; pass create_workspace: true to create it`,
      );
    }
    this.#store.addWorkspace({ workspaceId, createdAt: Date.now(), isDefault: false, origin: "empty" });
    return workspaceId;
  }

  /** Asks the session objects of sessions indexed as live for their real status (reports can be lost). */
  async #refreshLive(): Promise<void> {
    const live = this.#store.liveSessions();
    await Promise.all(
      live.map(async (s) => {
        const status = await objects.session(this.env, s.sessionId).status();
        // A session object is created right after its index entry; only an old entry without one is dead.
        if (status === null) {
          if (Date.now() - s.createdAt > NEVER_STARTED_MS) {
            this.#store.setSessionStatus(s.sessionId, "failed", Date.now(), "the session never started");
          }
        } else if (status !== s.status) {
          const ended = status !== "starting" && status !== "running";
          this.#store.setSessionStatus(s.sessionId, status, ended ? Date.now() : null, null);
        }
      }),
    );
  }

  #info(): ProjectInfo {
    const project = this.#require();
    const counts = this.#store.countSessions();
    return {
      project_id: project.id,
      ...project.config,
      created_at: new Date(project.createdAt).toISOString(),
      created_by: project.createdBy,
      host_id: project.hostId,
      sessions: { total: counts.total, running: counts.live },
      workspaces: this.#store.workspaces().length,
    };
  }
}
