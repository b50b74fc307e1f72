import type { UsageTotals } from "../../../protocol/usage.js";
import type { Env } from "../env.js";
import type { Result } from "../errors.js";
import type { Moved } from "../hosts/host-placement.js";
import { errorMessage } from "../log.js";
import { objects } from "../objects/keys.js";
import type { Approvals } from "./approvals.js";
import type { CallerCalls } from "./caller-calls.js";
import type { EventLog } from "./event-log.js";
import type { NestInfo } from "./nesting.js";
import { failure } from "./outcomes.js";
import { isLive, type SessionStatus } from "./session-record.js";
import type { SessionState } from "./session-state.js";
import type { CreateSessionInput } from "./types.js";

/** What a session is told when its project moved to another host for it (see `project_moved`). */
export type ProjectMoved = Omit<ReturnType<typeof movedEvent>, "type">;

function withoutType({ type: _, ...note }: ReturnType<typeof movedEvent>): ProjectMoved {
  return note;
}

function movedEvent(input: CreateSessionInput, moved: Moved, toHost: string) {
  const workspace = input.workspace.remoteUrl !== null ? ("from_remote" as const) : ("empty" as const);
  const why = moved.reason === "draining" ? `host ${moved.from} is draining` : `host ${moved.from} is away`;
  const begins = workspace === "from_remote" ? "cloned afresh from the project's remote" : "empty";
  return {
    type: "project_moved" as const,
    from_host: moved.from,
    to_host: toHost,
    reason: moved.reason,
    workspace,
    message: `project ${input.projectId} moved to host ${toHost}: ${why}. Its workspaces stay on ${moved.from}; workspace ${input.workspaceId} begins ${begins} here.`,
  };
}

/** Schedules one session tells when it goes idle; more wait for their next alarm instead. */
const MAX_IDLE_WATCHERS = 16;

/** How a session's life ended (`starting` and `running` are its live states). */
export type EndStatus = Exclude<SessionStatus, "starting" | "running">;

export interface SessionLifecycleDeps {
  env: Env;
  state: SessionState;
  events: Pick<EventLog, "emit">;
  calls: Pick<CallerCalls, "failAll">;
  approvals: Pick<Approvals, "failAll">;
  /** Whether a turn or a caller tool call is in flight. */
  busy(): boolean;
  /** The owner's MCP session follows the session from its first call. */
  attachOwner(input: CreateSessionInput): void;
  /** Queues the session's first message. */
  queueMessage(text: string): void;
  /** Closes the host's tunnel and every subscriber (the session ended). */
  closeLinks(): void;
  scheduleAlarm(): void;
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * A session's life: it starts (placed on a host, the droid started), and ends exactly once (its
 * droid exited or failed, a caller or the system ended it, its host was lost), taking its waiting
 * calls, its issued key, its children and its place on the host with it. Also who is told about
 * it: the project's index (status), and the schedules waiting for it to go idle.
 */
export class SessionLifecycle {
  readonly #d: SessionLifecycleDeps;

  constructor(deps: SessionLifecycleDeps) {
    this.#d = deps;
  }

  /** Records a new session, places it on a host and starts its droid there. */
  async start(input: CreateSessionInput): Promise<Result<{ moved: ProjectMoved | null }>> {
    const { state, events } = this.#d;
    state.begin({
      sessionId: input.sessionId,
      projectId: input.projectId,
      workspaceId: input.workspaceId,
      ownerTokenId: input.owner.tokenId,
      callerId: input.caller?.callerId ?? null,
      callerTools: input.caller?.tools ?? [],
      callerTimeoutMs: input.callerTimeoutMs,
      callerPresence: input.callerPresence ?? "stream",
      status: "starting",
      hostId: null,
      runtime: null,
      image: input.image,
      agent: input.agent,
      ...(input.approvals ? { approvals: { ...input.approvals, allowances: [] } } : {}),
      ...(input.network?.length ? { network: { policies: input.network, usage: null } } : {}),
      issuedTokenId: input.droidKey?.issuedTokenId ?? null,
      parentId: input.parent?.sessionId ?? null,
      depth: input.parent?.depth ?? 0,
      children: [],
      usage: null,
      createdAt: new Date().toISOString(),
      endedAt: null,
      lastMessageSeq: 0,
      storedHostEventSeq: 0,
      plainDroppedAt: null,
      idleTimeoutMs: input.idleTimeoutMs,
      maxLifetimeMs: input.maxLifetimeMs,
      lastActivityAt: Date.now(),
      completedTurnSeq: 0,
    });
    this.#d.attachOwner(input);
    if (input.caller) {
      events.emit({
        type: "caller_tools_declared",
        caller_id: input.caller.callerId,
        tools: input.caller.tools,
      });
    }
    if (input.prompt !== null) this.#d.queueMessage(input.prompt);
    const registry = objects.hostRegistry(this.#d.env);
    // The host is recorded before it is asked to start anything, so its tunnel is recognised.
    const placed = await registry.place({
      sessionId: input.sessionId,
      projectId: input.projectId,
      ...(input.relocate ? { relocate: true } : {}),
    });
    if (!placed.ok) return this.#failStart(placed);
    const event = placed.value.moved ? movedEvent(input, placed.value.moved, placed.value.hostId) : null;
    if (event) events.emit(event);
    const record = state.require();
    record.hostId = placed.value.hostId;
    record.runtime = placed.value.runtime;
    state.save();
    const started = await registry.start({
      sessionId: input.sessionId,
      projectId: input.projectId,
      workspaceId: input.workspaceId,
      workspace: input.workspace,
      project: input.project,
      ...(input.setup ? { setup: input.setup } : {}),
      // The droid's key rides in its environment only (never in an event or a log).
      spec: {
        agent: input.agent,
        ...(input.droidKey ? { env: input.droidKey.env } : {}),
        ...(input.network?.length ? { network: input.network } : {}),
      },
    });
    if (!started.ok) return this.#failStart(started);
    // The lifetime rules run from here on.
    this.#d.scheduleAlarm();
    if (isLive(record.status)) {
      this.reportStatus(null);
      events.emit({ type: "session_started", host_id: placed.value.hostId, runtime: placed.value.runtime });
    }
    // The move is said in the spawn's answer too: the caller learns its workspace did not come along.
    return { ok: true, value: { moved: event === null ? null : withoutType(event) } };
  }

  /**
   * Ends the session's life (droid exited or failed, a caller ended it, its host was lost):
   * waiting calls fail at once, the event is written, the tunnel and subscribers close, and the
   * host is asked to stop the droid (unless the placement is already released). Idempotent.
   */
  async finish(
    status: EndStatus,
    reason: string,
    options: { placementReleased?: boolean } = {},
  ): Promise<void> {
    const { state, env } = this.#d;
    const record = state.require();
    if (!isLive(record.status)) return;
    record.status = status;
    record.endedAt = new Date().toISOString();
    state.save();
    this.reportStatus(reason);
    const why = status === "lost" ? "host_lost" : "session_ended";
    this.#d.calls.failAll(failure(why, `session ${record.sessionId} ended: ${reason}`));
    this.#d.approvals.failAll(`session ${record.sessionId} ended: ${reason}`);
    this.#d.events.emit({ type: "session_ended", reason });
    this.tellIdleWatchers();
    if (record.issuedTokenId) await this.#revokeIssuedKey(record.issuedTokenId);
    // Its children end with it (each ends its own, and so on down).
    for (const childId of record.children ?? [])
      this.#d.waitUntil(
        objects
          .session(env, childId)
          .terminate(`its parent session ${record.sessionId} ended: ${reason}`)
          .catch((err: unknown) =>
            state.log.warn("could not end a child session", { child: childId, error: errorMessage(err) }),
          ),
      );
    this.#d.closeLinks();
    if (record.hostId && !options.placementReleased) await this.#releaseHost(record.sessionId, reason);
  }

  /**
   * Whether the session is live with a turn or a caller tool call in flight. When it is and
   * `scheduleId` is given, that schedule is told (`sessionIdle`) once it no longer is.
   */
  turnBusy(scheduleId: string | null): boolean {
    const { state } = this.#d;
    const record = state.current;
    if (!record || !isLive(record.status) || !this.#d.busy()) return false;
    const watchers = record.idleWatchers ?? [];
    if (scheduleId !== null && !watchers.includes(scheduleId) && watchers.length < MAX_IDLE_WATCHERS) {
      record.idleWatchers = [...watchers, scheduleId];
      state.save();
    }
    return true;
  }

  /** Tells the schedules waiting for this session that it is idle (best effort: they re-ask at their next alarm). */
  tellIdleWatchers(): void {
    const { state, env } = this.#d;
    const record = state.require();
    const watchers = record.idleWatchers ?? [];
    if (watchers.length === 0 || (isLive(record.status) && this.#d.busy())) return;
    record.idleWatchers = [];
    state.save();
    for (const scheduleId of watchers) {
      objects
        .schedule(env, scheduleId)
        .sessionIdle(record.sessionId)
        .catch((err: unknown) =>
          state.log.warn("could not tell a schedule the session is idle", {
            schedule: scheduleId,
            error: errorMessage(err),
          }),
        );
    }
  }

  /** Tells the project's index the session's status (best effort: the project re-asks when it matters). */
  reportStatus(reason: string | null): void {
    const { state, env } = this.#d;
    const record = state.require();
    objects
      .project(env, record.projectId)
      .sessionStatus({ sessionId: record.sessionId, status: record.status, reason })
      .catch((err: unknown) =>
        state.log.warn("could not report the status to the project", { error: errorMessage(err) }),
      );
  }

  /** Tells the project the session's model usage (cumulative totals), for its usage reports. */
  reportUsage(totals: UsageTotals): void {
    const { state, env } = this.#d;
    const record = state.require();
    objects
      .project(env, record.projectId)
      .sessionUsage({
        sessionId: record.sessionId,
        agent: record.agent?.runtime ?? "scripted",
        model: record.agent?.model ?? null,
        totals,
      })
      .catch((err: unknown) =>
        state.log.warn("could not report usage to the project", { error: errorMessage(err) }),
      );
  }

  /** What a child session needs to know of this one, its parent (nesting.ts). */
  async nestInfo(): Promise<NestInfo> {
    const record = this.#d.state.require();
    const children = record.children ?? [];
    const statuses = await Promise.all(
      children.map((id) =>
        objects
          .session(this.#d.env, id)
          .liveStatus()
          .catch(() => null),
      ),
    );
    return {
      projectId: record.projectId,
      workspaceId: record.workspaceId,
      depth: record.depth ?? 0,
      liveChildren: statuses.filter((s) => s !== null && isLive(s)).length,
      live: isLive(record.status),
      approvalPolicies: record.approvals?.policies ?? [],
      networkPolicies: record.network?.policies ?? [],
    };
  }

  /** A child this session's droid started: it ends with this session. */
  addChild(childId: string): void {
    const { state } = this.#d;
    const record = state.require();
    record.children = [...(record.children ?? []).filter((id) => id !== childId), childId];
    state.save();
    // Started just as this one ended: it goes too.
    if (!isLive(record.status))
      void objects
        .session(this.#d.env, childId)
        .terminate(`its parent session ${record.sessionId} has ended`);
  }

  #failStart(result: Result<unknown> & { ok: false }): Result<never> {
    const { state } = this.#d;
    const record = state.require();
    if (isLive(record.status)) {
      record.status = "failed";
      record.endedAt = new Date().toISOString();
      state.save();
      this.reportStatus(result.error.message);
      this.#d.events.emit({ type: "session_ended", reason: result.error.message });
    }
    // A host that was placed but failed to start frees its place.
    if (record.hostId) void this.#releaseHost(record.sessionId, result.error.message);
    return { ok: false, error: result.error };
  }

  /** The key issued for this session's droid ends with it. */
  async #revokeIssuedKey(tokenId: string): Promise<void> {
    const { log } = this.#d.state;
    try {
      const revoked = await objects.tokens(this.#d.env).revoke(tokenId);
      if (!revoked.ok)
        log.warn("could not revoke the session's key", { token: tokenId, error: revoked.error.message });
    } catch (err) {
      log.warn("could not revoke the session's key", { token: tokenId, error: errorMessage(err) });
    }
  }

  async #releaseHost(sessionId: string, reason: string): Promise<void> {
    const { log } = this.#d.state;
    try {
      const stopped = await objects.hostRegistry(this.#d.env).stopSession({ sessionId, reason });
      if (!stopped.ok) log.warn("the host did not confirm the stop", { error: stopped.error.message });
    } catch (err) {
      log.warn("could not ask the host to stop the droid", { error: errorMessage(err) });
    }
  }
}
