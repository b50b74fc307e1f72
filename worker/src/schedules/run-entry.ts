import type { ScheduleTarget } from "./schedule-record.js";

/**
 * One run of a schedule as its history shows it: when, why (the cron or a manual trigger), and
 * what happened on each target. A queued target's entry changes when its run starts.
 */
export type RunTrigger = "cron" | "manual";

/** `pending`: the run is deciding or starting on this target right now. */
export type TargetOutcome = "pending" | "started" | "skipped" | "queued" | "failed";

export interface TargetRun extends ScheduleTarget {
  outcome: TargetOutcome;
  session_id: string | null;
  /** The prompt went to a session already running in the workspace (session_behavior resume). */
  resumed: boolean;
  /** Why it was skipped, queued or failed. */
  reason: string | null;
  /** When a queued run started. */
  started_at: string | null;
}

export interface RunEntry {
  run_id: string;
  at: string;
  /** The cron time the run was for (null for a manual trigger). */
  scheduled_for: string | null;
  trigger: RunTrigger;
  /** started if any target started, else pending, queued, failed or skipped (in that order). */
  outcome: TargetOutcome;
  session_ids: string[];
  reason: string | null;
  targets: TargetRun[];
}

const PRECEDENCE: TargetOutcome[] = ["started", "pending", "queued", "failed", "skipped"];

/** Recomputes the run's outcome, session ids and reason from its targets. */
export function summarize(entry: RunEntry): RunEntry {
  const outcomes = new Set(entry.targets.map((t) => t.outcome));
  const reasons = [...new Set(entry.targets.map((t) => t.reason).filter((r): r is string => r !== null))];
  return {
    ...entry,
    outcome: PRECEDENCE.find((o) => outcomes.has(o)) ?? "skipped",
    session_ids: entry.targets.map((t) => t.session_id).filter((s): s is string => s !== null),
    reason: reasons.length ? reasons.join("; ") : null,
  };
}

export function newRun(
  runId: string,
  trigger: RunTrigger,
  at: number,
  scheduledFor: number | null,
  targets: readonly ScheduleTarget[],
): RunEntry {
  return summarize({
    run_id: runId,
    at: new Date(at).toISOString(),
    scheduled_for: scheduledFor === null ? null : new Date(scheduledFor).toISOString(),
    trigger,
    outcome: "pending",
    session_ids: [],
    reason: null,
    targets: targets.map((t) => ({
      project_id: t.project_id,
      workspace_id: t.workspace_id,
      outcome: "pending",
      session_id: null,
      resumed: false,
      reason: null,
      started_at: null,
    })),
  });
}
