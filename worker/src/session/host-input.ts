import type { AgentEvent } from "../../../protocol/agent-events.js";
import type { JsonObject } from "../../../protocol/json.js";
import type { OublietteTool } from "../../../protocol/oubliette-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { SessionUsageParams } from "../../../protocol/tunnel.js";
import type { GitPushed } from "../../../protocol/tunnel-git.js";
import { audit } from "../audit/audit.js";
import { authenticate, type CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { catalog } from "../flows/catalog.js";
import { withChildEvents } from "../flows/child-events.js";
import { backgroundContext } from "../flows/context.js";
import { spawnOrResume } from "../flows/session-spawn.js";
import type { Approvals } from "./approvals.js";
import type { EventLog } from "./event-log.js";
import type { Lifetime } from "./lifetime.js";
import { requireReader } from "./session-access.js";
import type { SessionLifecycle } from "./session-lifecycle.js";
import { isLive, type SessionStatus } from "./session-record.js";
import type { SessionState } from "./session-state.js";
import type { SessionViews } from "./session-views.js";
import type { EventsPage } from "./types.js";

/** How many pushes' ids a session remembers (a host re-sends only the few it has not had answered). */
const RECENT_PUSH_IDS = 64;

export interface HostInputDeps {
  env: Env;
  state: SessionState;
  events: Pick<EventLog, "emit">;
  lifetime: Pick<Lifetime, "touch">;
  lifecycle: Pick<SessionLifecycle, "finish" | "reportStatus" | "reportUsage" | "tellIdleWatchers">;
  views: Pick<SessionViews, "eventsPage">;
  approvals: Pick<Approvals, "gateTool">;
  scheduleAlarm(): void;
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * What the host sends the session about its droid (through the tunnel): agent events, usage
 * reports, and the droid's own requests: a child session, its own events, Oubliette's tools with
 * its API key. Each is checked and turned into the session's events and state.
 */
export class HostInput {
  readonly #d: HostInputDeps;
  /** A refused droid key has been told about (until the key works again). */
  #keyRefusalTold = false;

  constructor(deps: HostInputDeps) {
    this.#d = deps;
  }

  /** Agent events from the runner (via the host), idempotent by seq; returns the highest seq stored. */
  agentEvents(events: AgentEvent[]): number {
    const { state, lifecycle } = this.#d;
    const record = state.require();
    let ending: [SessionStatus & ("exited" | "failed"), string] | null = null;
    for (const { seq, ...event } of events) {
      if (seq <= record.storedHostEventSeq) continue;
      record.storedHostEventSeq = seq;
      this.#d.lifetime.touch(Date.now());
      this.#d.events.emit(event);
      if (event.type === "completion") {
        record.completedTurnSeq = Math.max(
          record.completedTurnSeq,
          event.message_seq ?? record.lastMessageSeq,
        );
        continue;
      }
      if (event.type !== "droid_status") continue;
      if (event.status === "running" && record.status === "starting") {
        record.status = "running";
        lifecycle.reportStatus(null);
      } else if (event.status === "exited")
        ending = ["exited", `the droid exited with code ${event.exit_code ?? "unknown"}`];
      else if (event.status === "failed") ending = ["failed", event.message ?? "the droid failed"];
    }
    state.save();
    this.#d.scheduleAlarm();
    lifecycle.tellIdleWatchers();
    // After the answer (which acknowledges the events to the runner) has gone out.
    if (ending) {
      const [status, reason] = ending;
      setTimeout(() => void lifecycle.finish(status, reason), 0);
    }
    return record.storedHostEventSeq;
  }

  /**
   * A usage report of the host's model proxy (totals: an older or repeated one changes nothing).
   * Each new total becomes a `usage` event; a refused model request (the budget is spent) says why.
   */
  usage(report: SessionUsageParams): void {
    const { state, events } = this.#d;
    const record = state.require();
    const { refused, ...totals } = report;
    const known = record.usage;
    const newer = !known || totals.requests > known.requests || totals.cost_usd > known.cost_usd;
    if (newer) {
      record.usage = totals;
      state.save();
      events.emit({ type: "usage", ...totals });
      this.#d.lifecycle.reportUsage(totals);
    }
    if (refused !== undefined) events.emit({ type: "error", message: refused });
  }

  /**
   * The droid pushed a branch through the host (`git push` in its container): a `git_pushed`
   * event, and an audit entry under the session's owner, made by this session; once per push id.
   */
  gitPushed({ push_id, ...pushed }: GitPushed): void {
    const record = this.#d.state.require();
    if (!isLive(record.status)) return;
    // The host sends a push again after a reconnect until this object answers: tell it once.
    const told = record.recentPushIds ?? [];
    if (told.includes(push_id)) return;
    record.recentPushIds = [...told, push_id].slice(-RECENT_PUSH_IDS);
    this.#d.state.save();
    this.#d.events.emit({ type: "git_pushed", ...pushed, by: "agent" });
    audit(
      this.#d.env,
      {
        token_id: record.ownerTokenId,
        action: "git.push",
        target: `${record.projectId} ${record.workspaceId} ${pushed.branch}`,
        outcome: "ok",
        via_session: record.sessionId,
      },
      (promise) => this.#d.waitUntil(promise),
      this.#d.state.log,
    );
  }

  /** `session_message` from the droid: a child session, by the same path as `oubliette_session spawn`. */
  async spawnChild(params: {
    message: string;
    workspace_id?: string | undefined;
    create_workspace?: boolean | undefined;
  }) {
    const record = this.#d.state.require();
    return toRpc(async () =>
      spawnOrResume(
        {
          project_id: record.projectId,
          ...(params.workspace_id !== undefined ? { workspace_id: params.workspace_id } : {}),
          create_workspace: params.create_workspace ?? false,
          new_session: true,
          prompt: params.message,
          source: `session:${record.sessionId}`,
        },
        this.#droidContext("write"),
      ),
    );
  }

  /** `session_events` from the droid: its own session's events, with its children's. */
  async ownEvents(params: {
    since_index: number;
    limit: number;
    include_children: boolean;
    children_since: Record<string, number>;
  }) {
    const ctx = this.#droidContext("read");
    const own: EventsPage = await toRpc(async () => {
      requireReader(this.#d.state.require(), ctx.principal);
      return this.#d.views.eventsPage(params.since_index, params.limit);
    });
    if (!params.include_children) return own;
    return withChildEvents(ctx, this.#d.state.require().sessionId, own, {
      limit: params.limit,
      childrenSince: params.children_since,
      via: null,
    });
  }

  /** Oubliette's tools as the droid's key may use them. */
  async oublietteTools(apiKey: string): Promise<{ tools: OublietteTool[] }> {
    return { tools: catalog().droidTools(await this.#listingPrincipal(apiKey)) };
  }

  /**
   * A droid's call of an Oubliette tool with its key (checked again on every call), through the
   * session's approval gate (`oubliette_<tool>`): a refusal is the tool's error, told to the droid.
   */
  async oublietteCall(apiKey: string, tool: string, args: JsonObject): Promise<unknown> {
    const principal = await this.#keyPrincipal(apiKey);
    const record = this.#d.state.require();
    const gate = await this.#d.approvals.gateTool(
      `oubliette_${tool}`,
      args,
      record.agent?.runtime ?? "scripted",
    );
    if (gate.decision === "deny") {
      const text = `the session's approval policy refused this call: ${gate.message ?? "denied"}`;
      return { content: [{ type: "text", text }], isError: true };
    }
    return catalog().droidCall(tool, args, {
      env: this.#d.env,
      principal,
      mcp: null,
      log: this.#d.state.log,
      waitUntil: (promise) => this.#d.waitUntil(promise),
      viaSession: this.#d.state.require().sessionId,
      runsJobs: true,
    });
  }

  /**
   * The authority a droid has through its own socket, without a key: its session's project, the
   * owner's token id (so what it starts is the owner's too).
   */
  #droidPrincipal(): CallerPrincipal {
    const record = this.#d.state.require();
    return { kind: "caller", tokenId: record.ownerTokenId, scopes: [`project:${record.projectId}`] };
  }

  #droidContext(access: "read" | "write") {
    const { state } = this.#d;
    const record = state.require();
    return {
      ...backgroundContext({
        env: this.#d.env,
        principal: this.#droidPrincipal(),
        access,
        what: `act for the droid of session ${record.sessionId}`,
        log: state.log,
      }),
      viaSession: record.sessionId,
    };
  }

  /**
   * The principal of the key the droid lists its tools with. A refused key leaves the droid
   * without Oubliette's tools: the session's subscribers are told, once per refusal streak.
   */
  async #listingPrincipal(apiKey: string): Promise<CallerPrincipal> {
    try {
      const principal = await this.#keyPrincipal(apiKey);
      this.#keyRefusalTold = false;
      return principal;
    } catch (err) {
      const record = this.#d.state.current;
      if (!this.#keyRefusalTold && record && isLive(record.status)) {
        this.#keyRefusalTold = true;
        this.#d.events.emit({
          type: "system",
          subtype: "oubliette_key_refused",
          message: `the droid's API key (OUBLIETTE_API_KEY) was refused (${err instanceof RpcError ? err.message : "invalid, expired or revoked"}): it has no Oubliette tools`,
        });
      }
      throw err;
    }
  }

  /**
   * The caller principal of a droid's API key, checked on every use (-32001 when it is not one).
   * A key minted for a session works here only when it is this session's: the public routes
   * refuse it, so this path is the one it has.
   */
  async #keyPrincipal(apiKey: string): Promise<CallerPrincipal> {
    const principal = await authenticate(this.#d.env, apiKey);
    if (principal?.kind !== "caller")
      throw new RpcError(RpcErrorCode.InvalidApiKey, "invalid or expired API key");
    const bound = principal.boundSession;
    if (bound !== undefined && bound !== this.#d.state.require().sessionId)
      throw new RpcError(
        RpcErrorCode.InvalidApiKey,
        "invalid API key here: it was issued to another session and works only from inside that session",
      );
    return principal;
  }
}

/** Runs work for the droid's socket: an AppError becomes an RpcError the droid can read (-32000, its code as the reason). */
async function toRpc<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError)
      throw new RpcError(RpcErrorCode.ServerError, err.message, { reason: err.code });
    throw err;
  }
}
