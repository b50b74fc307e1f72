/**
 * What a ScheduleDurableObject knows about its schedule (persisted as one row), and how the
 * schedule tool shows it.
 */

/** `skip`: a run finding the previous run's session busy on a target is skipped there; `queue`: it waits for that turn to finish; `parallel`: it starts anyway. */
export const OVERLAP_BEHAVIORS = ["skip", "queue", "parallel"] as const;
export type OverlapBehavior = (typeof OVERLAP_BEHAVIORS)[number];

/** Runs that may wait per target (overlap_behavior queue); one more is skipped. */
export const QUEUE_LIMIT = 5;

/** `resume`: the prompt goes to the target workspace's running session (one is spawned when none runs); `new`: always a new session. */
export const SESSION_BEHAVIORS = ["resume", "new"] as const;
export type SessionBehavior = (typeof SESSION_BEHAVIORS)[number];

/** Where a run goes: a project's workspace (null: the project's default workspace). */
export interface ScheduleTarget {
  project_id: string;
  workspace_id: string | null;
}

/** The token whose authority the runs use: issued (token directory) or configured. */
export interface Creator {
  tokenId: string;
  issued: boolean;
}

/** The settings a caller chooses (create sets them all; update any of them). */
export interface ScheduleSettings {
  name: string;
  cronExpr: string;
  timezone: string;
  prompt: string;
  targets: ScheduleTarget[];
  overlap: OverlapBehavior;
  sessionBehavior: SessionBehavior;
  enabled: boolean;
}

export interface ScheduleRecord extends ScheduleSettings {
  scheduleId: string;
  creator: Creator;
  /** Why the schedule turned itself off (its creator's authority is gone), or null. */
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
  /** The next cron fire time (epoch ms); null while disabled. */
  nextRunAt: number | null;
  /** Deleted: only the targets are kept, so access to the id is still checked. */
  deletedAt: number | null;
}

/** The message of a schedule object that holds no schedule (the tool names the id). */
export const NO_SCHEDULE = "schedule not found";

/** The identity of a target inside a schedule (queues and last sessions are kept per target). */
export function targetKey(target: ScheduleTarget): string {
  return `${target.project_id}/${target.workspace_id ?? ""}`;
}

/** The distinct projects a schedule's targets are in: every one is checked for access. */
export function projectsOf(targets: readonly ScheduleTarget[]): string[] {
  return [...new Set(targets.map((t) => t.project_id))];
}

export interface ScheduleInfo {
  schedule_id: string;
  name: string;
  cron_expr: string;
  timezone: string;
  prompt: string;
  targets: ScheduleTarget[];
  overlap_behavior: OverlapBehavior;
  session_behavior: SessionBehavior;
  enabled: boolean;
  disabled_reason: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
  next_run_at: string | null;
  /** Runs waiting (overlap_behavior queue) on any target. */
  queued_runs: number;
  last_run: { run_id: string; at: string; trigger: string; outcome: string } | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function scheduleInfo(
  r: ScheduleRecord,
  queuedRuns: number,
  lastRun: ScheduleInfo["last_run"],
): ScheduleInfo {
  return {
    schedule_id: r.scheduleId,
    name: r.name,
    cron_expr: r.cronExpr,
    timezone: r.timezone,
    prompt: r.prompt,
    targets: r.targets,
    overlap_behavior: r.overlap,
    session_behavior: r.sessionBehavior,
    enabled: r.enabled,
    disabled_reason: r.disabledReason,
    created_by: r.creator.tokenId,
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
    next_run_at: iso(r.nextRunAt),
    queued_runs: queuedRuns,
    last_run: lastRun,
  };
}
