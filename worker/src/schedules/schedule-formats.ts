import { z } from "zod";
import type { RecordFormat, SameShape } from "../objects/stored-record.js";
import type { RunEntry } from "./run-entry.js";
import { OVERLAP_BEHAVIORS, type ScheduleRecord, SESSION_BEHAVIORS } from "./schedule-record.js";

const TargetSchema = z.object({ project_id: z.string(), workspace_id: z.string().nullable() });

/** A schedule's record as stored (read back through `SCHEDULE_RECORD`: parsed, never cast). */
const ScheduleRecordSchema = z.object({
  name: z.string(),
  cronExpr: z.string(),
  timezone: z.string(),
  prompt: z.string(),
  targets: z.array(TargetSchema),
  overlap: z.enum(OVERLAP_BEHAVIORS),
  sessionBehavior: z.enum(SESSION_BEHAVIORS),
  enabled: z.boolean(),
  scheduleId: z.string(),
  creator: z.object({ tokenId: z.string(), issued: z.boolean() }),
  disabledReason: z.string().nullable(),
  createdAt: z.number(),
  updatedAt: z.number(),
  nextRunAt: z.number().nullable(),
  deletedAt: z.number().nullable(),
});

/** One run in a schedule's history as stored. */
const RunEntrySchema = z.object({
  run_id: z.string(),
  at: z.string(),
  scheduled_for: z.string().nullable(),
  trigger: z.enum(["cron", "manual"]),
  outcome: z.enum(["pending", "started", "skipped", "queued", "failed"]),
  session_ids: z.array(z.string()),
  reason: z.string().nullable(),
  targets: z.array(
    TargetSchema.extend({
      outcome: z.enum(["pending", "started", "skipped", "queued", "failed"]),
      session_id: z.string().nullable(),
      resumed: z.boolean(),
      reason: z.string().nullable(),
      started_at: z.string().nullable(),
    }),
  ),
});

/** How a schedule's record is stored: version 1 is the first with a version (0: bare JSON). */
export const SCHEDULE_RECORD = {
  kind: "schedule",
  version: 1,
  schema: ScheduleRecordSchema,
} satisfies RecordFormat<typeof ScheduleRecordSchema>;

/** How a run of a schedule's history is stored (version 0: bare JSON). */
export const RUN_ENTRY = { kind: "schedule run", version: 1, schema: RunEntrySchema } satisfies RecordFormat<
  typeof RunEntrySchema
>;

const sameRecord: SameShape<z.output<typeof ScheduleRecordSchema>, ScheduleRecord> = true;
const sameRun: SameShape<z.output<typeof RunEntrySchema>, RunEntry> = true;
void sameRecord;
void sameRun;
