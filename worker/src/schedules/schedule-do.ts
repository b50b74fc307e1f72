import { DurableObject } from "cloudflare:workers";
import { project, requireAccess } from "../auth/access.js";
import type { Access } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError, capture, type Result } from "../errors.js";
import { createLog, errorMessage, type Log } from "../log.js";
import { creatorAuthority } from "./authority.js";
import { nextFire } from "./cron.js";
import type { RunEntry } from "./run-entry.js";
import {
  type Creator,
  NO_SCHEDULE,
  projectsOf,
  type ScheduleInfo,
  type ScheduleRecord,
  type ScheduleSettings,
  scheduleInfo,
  targetKey,
} from "./schedule-record.js";
import { ScheduleRuns } from "./schedule-runs.js";
import { ScheduleStore } from "./schedule-store.js";

export interface CreateScheduleInput extends ScheduleSettings {
  scheduleId: string;
  creator: Creator;
}

export type ScheduleChange = Partial<ScheduleSettings>;

/** While runs wait, the object also wakes this often to ask whether their session went idle. */
const QUEUE_RECHECK_MS = 5 * 60_000;

/**
 * One per schedule: its settings, its alarm (set to the next cron fire time: nothing polls), its
 * run history and its queued runs. Every RPC entry point checks the caller's access to every
 * project the schedule targets; the runs themselves use the creator's authority (`ScheduleRuns`).
 */
export class ScheduleDurableObject extends DurableObject<Env> {
  readonly #store: ScheduleStore;
  readonly #runs: ScheduleRuns;
  #record: ScheduleRecord | null;
  #log: Log;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new ScheduleStore(ctx.storage.sql);
    this.#record = this.#store.loadRecord();
    this.#log = createLog({ component: "schedule", schedule: this.#record?.scheduleId });
    this.#runs = new ScheduleRuns({
      env,
      store: this.#store,
      record: () => this.#live(),
      disable: (reason) => this.#disable(reason),
      waitUntil: (promise) => ctx.waitUntil(promise),
      log: () => this.#log,
    });
  }

  // ------------------------------------------------------------------ RPC from the schedule tool

  async create(input: CreateScheduleInput): Promise<Result<ScheduleInfo>> {
    return capture(async () => {
      if (this.#record) throw new AppError("conflict", `schedule ${input.scheduleId} already exists`);
      const now = Date.now();
      const { scheduleId, creator, ...settings } = input;
      this.#record = {
        ...settings,
        scheduleId,
        creator,
        disabledReason: null,
        createdAt: now,
        updatedAt: now,
        nextRunAt: settings.enabled ? nextFire(settings.cronExpr, settings.timezone, now) : null,
        deletedAt: null,
      };
      this.#log = createLog({ component: "schedule", schedule: scheduleId });
      this.#save();
      await this.#arm();
      this.#log.info("schedule created", { creator: creator.tokenId, next: this.#record.nextRunAt });
      return this.#info();
    });
  }

  async info(principal: CallerPrincipal): Promise<Result<ScheduleInfo>> {
    return capture(() => {
      this.#require(principal, "read", "read");
      return this.#info();
    });
  }

  async history(
    principal: CallerPrincipal,
    limit: number,
  ): Promise<Result<{ schedule_id: string; runs: RunEntry[] }>> {
    return capture(() => {
      const record = this.#require(principal, "read", "read the history of");
      return { schedule_id: record.scheduleId, runs: this.#store.runs(limit) };
    });
  }

  /**
   * Changes settings. A change of cron or timezone, or turning it on, moves the next fire time.
   * Turning it on, or giving an enabled schedule new targets, is refused when its creator's
   * authority no longer covers them (its runs would only fail).
   */
  async update(principal: CallerPrincipal, change: ScheduleChange): Promise<Result<ScheduleInfo>> {
    return capture(async () => {
      const current = this.#require(principal, "write", "update");
      const what = `update schedule ${current.scheduleId}`;
      for (const p of projectsOf(change.targets ?? [])) requireAccess(principal, "write", project(p), what);
      const enabled = change.enabled ?? current.enabled;
      if (enabled && (!current.enabled || change.targets !== undefined)) {
        const authority = await creatorAuthority(
          this.env,
          current.creator,
          change.targets ?? current.targets,
        );
        if (!authority.ok) {
          throw new AppError(
            "conflict",
            `schedule ${current.scheduleId} runs with the authority of token ${current.creator.tokenId}, and ${authority.reason}; create a new schedule instead`,
          );
        }
      }
      // From here on nothing awaits until the record is saved.
      const record = this.#require(principal, "write", "update");
      const defined = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
      Object.assign(record, defined, { updatedAt: Date.now() });
      if (change.enabled === true) record.disabledReason = null;
      const retime =
        change.cronExpr !== undefined || change.timezone !== undefined || change.enabled !== undefined;
      if (retime)
        record.nextRunAt = record.enabled ? nextFire(record.cronExpr, record.timezone, Date.now()) : null;
      const kept = new Set(record.targets.map(targetKey));
      if (!record.enabled) this.#runs.dropQueued(() => true, "the schedule was disabled");
      else if (record.overlap !== "queue")
        this.#runs.dropQueued(() => true, "overlap_behavior is no longer queue");
      else this.#runs.dropQueued((key) => !kept.has(key), "the target was removed from the schedule");
      this.#runs.forgetTargetsBut(kept);
      this.#save();
      await this.#arm();
      return this.#info();
    });
  }

  /** Deletes the schedule: its alarm, history and queue go; only a tombstone with its targets stays. */
  async remove(principal: CallerPrincipal): Promise<Result<{ schedule_id: string; deleted: true }>> {
    return capture(async () => {
      const record = this.#require(principal, "write", "delete");
      this.#store.wipeRuns();
      Object.assign(record, { deletedAt: Date.now(), enabled: false, nextRunAt: null, prompt: "" });
      this.#save();
      await this.ctx.storage.deleteAlarm();
      this.#log.info("schedule deleted", { by: principal.tokenId });
      return { schedule_id: record.scheduleId, deleted: true as const };
    });
  }

  /** Runs the schedule now (enabled or not), with its creator's authority; answers the run. */
  async trigger(principal: CallerPrincipal): Promise<Result<RunEntry>> {
    return capture(async () => {
      this.#require(principal, "write", "trigger");
      const run = await this.#runs.run("manual", null);
      await this.#arm();
      return run;
    });
  }

  // ------------------------------------------------------------------ RPC from sessions

  /** A session this schedule waited for is idle: the runs queued behind it may start. */
  async sessionIdle(sessionId: string): Promise<void> {
    if (!this.#record || this.#record.deletedAt !== null) return;
    await this.#runs.sessionIdle(sessionId);
    await this.#arm();
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    const record = this.#record;
    if (!record || record.deletedAt !== null) return;
    try {
      // Queued runs whose session went idle without telling us (a lost notice) start first.
      await this.#runs.drainAll();
      const due = record.nextRunAt;
      const now = Date.now();
      if (record.enabled && due !== null && now >= due) {
        // The next time is set before the run, so a run that takes long never fires twice.
        record.nextRunAt = nextFire(record.cronExpr, record.timezone, now);
        this.#save();
        await this.#arm();
        await this.#runs.run("cron", due);
      }
    } catch (err) {
      this.#log.error("the schedule's alarm failed", { error: errorMessage(err) });
    }
    await this.#arm();
  }

  // ------------------------------------------------------------------ private

  /** The record, after checking `principal` has `access` on every project the schedule targets. */
  #require(principal: CallerPrincipal, access: Access, verb: string): ScheduleRecord {
    const record = this.#record;
    if (!record) throw new AppError("not_found", NO_SCHEDULE);
    for (const p of projectsOf(record.targets)) {
      requireAccess(principal, access, project(p), `${verb} schedule ${record.scheduleId}`);
    }
    if (record.deletedAt !== null)
      throw new AppError("not_found", `schedule ${record.scheduleId} was deleted`);
    return record;
  }

  /** The record of a schedule that exists and is not deleted. */
  #live(): ScheduleRecord | null {
    const record = this.#record;
    return record && record.deletedAt === null ? record : null;
  }

  #save(): void {
    if (this.#record) this.#store.saveRecord(this.#record);
  }

  /** Turns the schedule off for a reason of its own (its creator's authority is gone). */
  async #disable(reason: string): Promise<void> {
    const record = this.#live();
    if (!record) return;
    this.#log.warn("schedule disabled", { reason });
    Object.assign(record, { enabled: false, disabledReason: reason, nextRunAt: null, updatedAt: Date.now() });
    this.#runs.dropQueued(() => true, `the schedule was disabled: ${reason}`);
    this.#save();
    await this.#arm();
  }

  /** The alarm: the next cron fire time, or sooner while runs wait (a backstop for lost idle notices). */
  async #arm(): Promise<void> {
    const record = this.#live();
    const due = [
      record?.enabled ? record.nextRunAt : null,
      record && this.#store.allQueued().length > 0 ? Date.now() + QUEUE_RECHECK_MS : null,
    ].filter((t): t is number => t !== null);
    if (due.length === 0) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.min(...due));
  }

  #info(): ScheduleInfo {
    const record = this.#record;
    if (!record) throw new AppError("not_found", NO_SCHEDULE);
    const last = this.#store.runs(1)[0];
    return scheduleInfo(
      record,
      this.#store.allQueued().length,
      last ? { run_id: last.run_id, at: last.at, trigger: last.trigger, outcome: last.outcome } : null,
    );
  }
}
