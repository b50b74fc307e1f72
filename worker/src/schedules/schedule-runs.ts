import { audit } from "../audit/audit.js";
import { randomHex } from "../auth/digest.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { backgroundContext } from "../flows/context.js";
import { spawnOrResume } from "../flows/session-spawn.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import { creatorAuthority } from "./authority.js";
import { newRun, type RunEntry, type RunTrigger, type TargetRun } from "./run-entry.js";
import { QUEUE_LIMIT, type ScheduleRecord, type ScheduleTarget, targetKey } from "./schedule-record.js";
import type { ScheduleStore } from "./schedule-store.js";
import { Serial } from "./serial.js";

export interface ScheduleRunsDeps {
  env: Env;
  store: ScheduleStore;
  /** The schedule, or null once it is deleted. */
  record(): ScheduleRecord | null;
  /** Turns the schedule off (its creator's authority is gone). */
  disable(reason: string): Promise<void>;
  /** Keeps work after an answer alive (the audit write). */
  waitUntil(promise: Promise<unknown>): void;
  log(): Log;
}

type Checked = { ok: true; principal: CallerPrincipal } | { ok: false; reason: string; lasting: boolean };

/**
 * A schedule's runs. A run checks the creator's authority, then on each target decides by the
 * overlap behaviour, judged by the session the target's previous run started: `parallel` starts;
 * `skip` is recorded as skipped while that session's turn is in flight; `queue` waits (at most
 * QUEUE_LIMIT runs per target) and starts when the session tells it the turn is over
 * (`sessionIdle`), or when the schedule's alarm finds it so. Decisions about one target are made
 * one at a time (`Serial`), since the object takes other requests while it awaits a session.
 */
export class ScheduleRuns {
  readonly #d: ScheduleRunsDeps;
  readonly #serial = new Serial();

  constructor(deps: ScheduleRunsDeps) {
    this.#d = deps;
  }

  /** One run on every target; answers its history entry as it stands when every target decided. */
  async run(trigger: RunTrigger, scheduledFor: number | null): Promise<RunEntry> {
    const record = this.#record();
    const runId = `run_${randomHex(8)}`;
    const targets = [...record.targets];
    const fresh = newRun(runId, trigger, Date.now(), scheduledFor, targets);
    this.#d.store.addRun(fresh);
    const authority = await this.#authority(record);
    if (authority.ok) {
      await Promise.all(targets.map((t) => this.#fire(runId, t, authority.principal)));
    } else {
      this.#d.store.updateTarget(runId, () => true, { outcome: "failed", reason: authority.reason });
      if (authority.lasting) await this.#d.disable(authority.reason);
    }
    const entry = this.#d.store.run(runId) ?? fresh;
    this.#audit(record, entry);
    return entry;
  }

  /** Starts what waits behind `sessionId`. */
  async sessionIdle(sessionId: string): Promise<void> {
    const keys = this.#d.store.targetsOfSession(sessionId);
    await Promise.all(keys.map((key) => this.#drain(key)));
  }

  /** Starts what waits on any target whose last session is idle (the alarm's backstop). */
  async drainAll(): Promise<void> {
    const keys = new Set(this.#d.store.allQueued().map((q) => q.target));
    await Promise.all([...keys].map((key) => this.#drain(key)));
  }

  /** Drops queued runs of the targets `which` picks, recording them as skipped for `reason`. */
  dropQueued(which: (key: string) => boolean, reason: string): void {
    for (const queued of this.#d.store.allQueued()) {
      if (!which(queued.target) || !this.#d.store.dequeue(queued.seq)) continue;
      this.#markTarget(queued.runId, queued.target, { outcome: "skipped", reason });
    }
  }

  /** Forgets the last sessions of targets no longer in the schedule. */
  forgetTargetsBut(kept: Set<string>): void {
    for (const queued of this.#d.store.allQueued()) kept.add(queued.target);
    this.#d.store.forgetTargetsExcept([...kept]);
  }

  // ------------------------------------------------------------------ private

  #record(): ScheduleRecord {
    const record = this.#d.record();
    if (!record) throw new AppError("not_found", "the schedule was deleted");
    return record;
  }

  async #authority(record: ScheduleRecord): Promise<Checked> {
    try {
      const authority = await creatorAuthority(this.#d.env, record.creator, record.targets);
      return authority.ok ? authority : { ...authority, lasting: true };
    } catch (err) {
      // Not a verdict on the token: this run fails, the schedule stays on.
      const reason = `could not check the authority of token ${record.creator.tokenId}: ${errorMessage(err)}`;
      return { ok: false, reason, lasting: false };
    }
  }

  /** Decides and acts on one target of a run. */
  async #fire(runId: string, target: ScheduleTarget, principal: CallerPrincipal): Promise<void> {
    const key = targetKey(target);
    const queued = await this.#serial.run(key, async () => {
      const record = this.#d.record();
      if (!record) {
        this.#markTarget(runId, key, { outcome: "skipped", reason: "the schedule was deleted" });
        return false;
      }
      if (record.overlap !== "parallel") {
        const last = this.#d.store.lastSession(key);
        const waiting = this.#d.store.queued(key).length;
        const busy = waiting === 0 && last !== null && (await this.#busy(last, null));
        if (record.overlap === "skip" && busy) {
          const reason = `session ${last} of an earlier run is still busy`;
          this.#markTarget(runId, key, { outcome: "skipped", reason });
          return false;
        }
        if (record.overlap === "queue" && (busy || waiting > 0))
          return this.#enqueue(runId, key, last, waiting);
      }
      await this.#start(runId, target, principal);
      return false;
    });
    // Outside the target's turn: the drain takes it (it asks the session to tell us when it is idle).
    if (queued) await this.#drain(key);
  }

  #enqueue(runId: string, key: string, last: string | null, waiting: number): boolean {
    if (waiting >= QUEUE_LIMIT) {
      const reason = `${waiting} runs already wait on this target (overlap_behavior queue holds ${QUEUE_LIMIT})`;
      this.#markTarget(runId, key, { outcome: "skipped", reason });
      return false;
    }
    this.#d.store.enqueue(key, runId, Date.now());
    const reason =
      waiting > 0 ? `waits behind ${waiting} queued run(s)` : `waits for session ${last} to finish its turn`;
    this.#markTarget(runId, key, { outcome: "queued", reason });
    return true;
  }

  /** Starts the runs queued on a target, oldest first, while its last session is idle. */
  #drain(key: string): Promise<void> {
    return this.#serial.run(key, async () => {
      for (;;) {
        const record = this.#d.record();
        const head = this.#d.store.queued(key)[0];
        if (!record || !head) return;
        const last = this.#d.store.lastSession(key);
        if (last !== null && (await this.#busy(last, record.scheduleId))) return;
        if (!this.#d.store.dequeue(head.seq)) continue;
        const target = record.targets.find((t) => targetKey(t) === key);
        if (!target) {
          const reason = "the target was removed from the schedule";
          this.#markTarget(head.runId, key, { outcome: "skipped", reason });
          continue;
        }
        // Checked again: the authority is the creator's at the moment the run starts.
        const authority = await this.#authority(record);
        if (!authority.ok) {
          this.#markTarget(head.runId, key, { outcome: "failed", reason: authority.reason });
          if (authority.lasting) await this.#d.disable(authority.reason);
          continue;
        }
        await this.#start(head.runId, target, authority.principal);
      }
    });
  }

  /** Spawns, or resumes the workspace's session, as the session tool does, with the prompt. */
  async #start(runId: string, target: ScheduleTarget, principal: CallerPrincipal): Promise<void> {
    const record = this.#record();
    const key = targetKey(target);
    const ctx = backgroundContext({
      env: this.#d.env,
      principal,
      access: "write",
      what: `run schedule ${record.scheduleId}`,
      log: this.#d.log(),
    });
    try {
      const started = await spawnOrResume(
        {
          project_id: target.project_id,
          workspace_id: target.workspace_id ?? undefined,
          create_workspace: false,
          new_session: record.sessionBehavior === "new",
          prompt: record.prompt,
          source: `schedule:${record.scheduleId}`,
        },
        ctx,
      );
      this.#d.store.setLastSession(key, started.session_id);
      this.#markTarget(runId, key, {
        outcome: "started",
        session_id: started.session_id,
        resumed: started.resumed,
        reason: null,
        started_at: new Date().toISOString(),
      });
    } catch (err) {
      const reason = err instanceof AppError ? `${err.message} (${err.code})` : "internal error";
      if (!(err instanceof AppError)) this.#d.log().error("a run failed", { error: errorMessage(err) });
      this.#markTarget(runId, key, { outcome: "failed", reason });
    }
  }

  /** Whether the session's turn is in flight; with `watcher`, the session tells that schedule when it ends. */
  async #busy(sessionId: string, watcher: string | null): Promise<boolean> {
    try {
      return await objects.session(this.#d.env, sessionId).turnBusy(watcher);
    } catch (err) {
      this.#d.log().warn("could not ask a session whether it is busy", {
        session: sessionId,
        error: errorMessage(err),
      });
      return false;
    }
  }

  #markTarget(runId: string, key: string, change: Partial<TargetRun>): void {
    this.#d.store.updateTarget(runId, (t) => targetKey(t) === key, change);
  }

  /** A run acts with the creator's token: the audit log names it. */
  #audit(record: ScheduleRecord, entry: RunEntry): void {
    const log = this.#d.log();
    audit(
      this.#d.env,
      {
        token_id: record.creator.tokenId,
        action: `schedule.run (${entry.trigger})`,
        target: record.scheduleId,
        outcome: entry.outcome === "failed" ? "failed" : "ok",
      },
      this.#d.waitUntil,
      log,
    );
  }
}
