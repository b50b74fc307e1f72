import { DurableObject } from "cloudflare:workers";
import type { JOB_END_STATUSES } from "../../../protocol/job-events.js";
import type { Env } from "../env.js";
import { AppError, capture, type Result } from "../errors.js";
import { createLog, errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import type { JobEvent } from "./job-events.js";
import {
  isEnded,
  type JobInfo,
  type JobRecord,
  type JobStart,
  type JobStatus,
  jobInfo,
} from "./job-record.js";
import { type JobOutcome, runJob } from "./job-runner.js";
import { JobStore } from "./job-store.js";
import { JOB_TTL_MS } from "./timing.js";

/** Longest one `wait` call holds (callers wait longer in slices, reporting progress between). */
const MAX_WAIT_MS = 60_000;

/**
 * One per job: its record, its work and, for a day after it ends, its outcome.
 *
 * The work runs here, from the object's alarm, not in the request that asked for it: a Durable
 * Object stays alive while it handles an event (an alarm may run for 15 minutes), but under this
 * Worker's compatibility date nothing keeps one alive for a promise no request waits on
 * (`waitUntil` does not, in an object), so work left behind by a call that answered its job id
 * could be cut off unseen. Alarms run at least once: the record says `running` before the work
 * starts, and an alarm that finds a job running that no alarm here runs marks it failed instead
 * of running it twice. The same alarm is then set to the outcome's expiry, when the object forgets
 * the job: nothing polls.
 */
export class JobDurableObject extends DurableObject<Env> {
  readonly #store: JobStore;
  #record: JobRecord | null;
  #log: Log;
  /** Set while this instance runs the job's work. */
  #controller: AbortController | null = null;
  readonly #waiters = new Set<() => void>();
  /** The job's events still being sent (see #emit). */
  #sending: Promise<void> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new JobStore(ctx.storage.sql);
    this.#record = this.#store.load();
    this.#log = createLog({ component: "job", job: this.#record?.jobId });
  }

  // ------------------------------------------------------------------ RPC

  /** Records the job and wakes the alarm that runs it. */
  async start(input: JobStart): Promise<Result<JobInfo>> {
    return capture(async () => {
      if (this.#record) throw new AppError("conflict", `job ${input.jobId} already exists`);
      const { arguments: args, principal, ...rest } = input;
      this.#record = {
        ...rest,
        tokenId: principal.tokenId,
        status: "pending",
        createdAt: Date.now(),
        startedAt: null,
        endedAt: null,
        expiresAt: null,
        result: undefined,
        error: null,
        progress: null,
        cancel: null,
        sessionId: typeof args.session_id === "string" ? args.session_id : null,
        pending: { arguments: args, principal },
      };
      this.#log = createLog({ component: "job", job: input.jobId, tool: input.label });
      this.#store.save(this.#record);
      await this.#listed(this.#record);
      await this.ctx.storage.setAlarm(Date.now());
      return jobInfo(this.#record);
    });
  }

  /** The job; `withResult: false` leaves out its result (for listings). */
  async get(withResult = true): Promise<Result<JobInfo>> {
    return capture(() => jobInfo(this.#known(), withResult));
  }

  /** The job once it has ended, or as it is after `waitMs`. */
  async wait(waitMs: number): Promise<Result<JobInfo>> {
    return capture(async () => {
      const record = this.#known();
      if (!isEnded(record.status) && waitMs > 0) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            this.#waiters.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(waitMs, MAX_WAIT_MS));
          this.#waiters.add(wake);
        });
      }
      return jobInfo(this.#known());
    });
  }

  /**
   * Cancels the job: it is `cancelled` from now on, and its work is aborted. Work that cannot stop
   * early goes on to its end; `cancel.work` says which, and a late outcome is kept beside it.
   */
  async cancel(reason: string): Promise<Result<JobInfo>> {
    return capture(async () => {
      const record = this.#known();
      if (isEnded(record.status))
        throw new AppError("conflict", `job ${record.jobId} already ended (${record.status})`);
      const running = this.#controller !== null;
      record.pending = null;
      record.cancel = { reason, at: Date.now(), work: running ? "running" : "stopped" };
      await this.#end(record, "cancelled");
      this.#controller?.abort(new AppError("cancelled", reason));
      this.#log.info("job cancelled", { reason, running });
      return jobInfo(record);
    });
  }

  // ------------------------------------------------------------------ alarm

  override async alarm(): Promise<void> {
    const record = this.#record;
    if (!record || this.#controller !== null) return;
    if (record.status === "pending") return this.#run(record);
    if (record.status === "running") {
      // Its run is gone (the object restarted, or the run outlasted an alarm's time).
      record.error = {
        code: "internal",
        message: `the run of ${record.label} was cut off before its work ended; it was not run again`,
      };
      await this.#end(record, "failed");
      return;
    }
    if (record.expiresAt !== null && Date.now() >= record.expiresAt) {
      await objects.jobDirectory(this.env).remove(record.jobId);
      await this.ctx.storage.deleteAll();
      this.#record = null;
      this.#log.info("job forgotten");
      return;
    }
    if (record.expiresAt !== null) await this.ctx.storage.setAlarm(record.expiresAt);
  }

  async #run(record: JobRecord): Promise<void> {
    const pending = record.pending;
    record.pending = null;
    if (!pending) return;
    const controller = new AbortController();
    this.#controller = controller;
    record.status = "running";
    record.startedAt = Date.now();
    this.#store.save(record);
    await this.#listed(record);
    this.#emit({
      type: "job_started",
      job_id: record.jobId,
      tool: record.label,
      project_id: record.projectId,
      at: new Date().toISOString(),
    });
    let outcome: JobOutcome;
    try {
      outcome = await runJob({
        env: this.env,
        record,
        arguments: pending.arguments,
        principal: pending.principal,
        signal: controller.signal,
        progress: (message) => this.#progress(record, message),
        actsOn: (sessionId) => {
          if (record.sessionId !== null) return;
          record.sessionId = sessionId;
          this.#store.save(record);
        },
        log: this.#log,
      });
    } finally {
      this.#controller = null;
    }
    if (outcome.ok) record.result = outcome.value;
    else record.error = outcome.error;
    // A cancel may have come while the work ran.
    if ((record.status as JobStatus) === "cancelled" && record.cancel) {
      const stopped = !outcome.ok && outcome.error.code === "cancelled";
      record.cancel.work = stopped ? "stopped" : "finished";
      this.#store.save(record);
      // The cancel set the expiry alarm while this one ran; set it again so it outlives this run.
      if (record.expiresAt !== null) await this.ctx.storage.setAlarm(record.expiresAt);
      return;
    }
    await this.#end(record, outcome.ok ? "complete" : "failed");
  }

  #progress(record: JobRecord, message: string): boolean {
    if (record.status !== "running") return false;
    record.progress = { message: message.slice(0, 1000), at: Date.now() };
    this.#store.save(record);
    this.#emit({
      type: "job_progress",
      job_id: record.jobId,
      tool: record.label,
      message: record.progress.message,
      at: new Date().toISOString(),
    });
    return true;
  }

  /** The job ended: its outcome is kept until it expires, its waiters and its caller hear of it. */
  async #end(record: JobRecord, status: (typeof JOB_END_STATUSES)[number]): Promise<void> {
    const now = Date.now();
    record.status = status;
    record.endedAt = now;
    record.expiresAt = now + JOB_TTL_MS;
    this.#store.save(record);
    // The expiry and the directory first: whoever hears of the end (a waiter answered, an event)
    // and then asks `job list`, or for the outcome's expiry, finds them already there.
    await this.ctx.storage.setAlarm(record.expiresAt);
    await this.#listed(record);
    for (const wake of [...this.#waiters]) wake();
    this.#emit({
      type: "job_ended",
      job_id: record.jobId,
      tool: record.label,
      project_id: record.projectId,
      status,
      ...(record.error && status !== "cancelled" ? { error: record.error } : {}),
      at: new Date(now).toISOString(),
    });
    this.#log.info("job ended", { status, error: record.error?.code });
  }

  /** Tells the directory how the job stands (a failure only makes `job list` late). */
  async #listed(record: JobRecord): Promise<void> {
    const entry = {
      jobId: record.jobId,
      projectId: record.projectId,
      target: record.target,
      status: record.status,
      createdAt: record.createdAt,
      expiresAt: record.expiresAt,
    };
    try {
      await objects.jobDirectory(this.env).put(entry);
    } catch (err) {
      this.#log.warn("could not update the job directory", { error: errorMessage(err) });
    }
  }

  /**
   * Sends an event to the MCP session whose call started the job and into the log of each droid
   * session it concerns (the one whose droid called, the one it acts on). Sent one after another,
   * so every listener hears a job's events in order.
   */
  #emit(event: JobEvent): void {
    const record = this.#record;
    if (!record) return;
    const sessions = new Set([record.viaSession, record.sessionId].filter((id) => id !== null));
    const mcp = record.mcp;
    const send = async () => {
      if (mcp)
        await this.#tell("MCP session", () => objects.mcpSession(this.env, mcp.mcpSessionId).jobEvent(event));
      for (const sessionId of sessions)
        await this.#tell("session", () => objects.session(this.env, sessionId).jobEvent(event));
    };
    this.#sending = this.#sending.then(send);
    this.ctx.waitUntil(this.#sending);
  }

  async #tell(whom: string, send: () => Promise<unknown>): Promise<void> {
    try {
      await send();
    } catch (err) {
      this.#log.warn(`could not send a job event to its ${whom}`, { error: errorMessage(err) });
    }
  }

  #known(): JobRecord {
    if (!this.#record) throw new AppError("not_found", "no such job (or its outcome has expired)");
    return this.#record;
  }
}
