import { z } from "zod";
import { visibleProjects } from "../auth/access.js";
import { randomHex } from "../auth/digest.js";
import { AppError, type Result, unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { requireFits } from "../flows/session-spawn.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema, WorkspaceIdSchema } from "../projects/project-config.js";
import { DEFAULT_TIMEZONE, requireValidCron } from "../schedules/cron.js";
import {
  NO_SCHEDULE,
  OVERLAP_BEHAVIORS,
  projectsOf,
  QUEUE_LIMIT,
  SESSION_BEHAVIORS,
} from "../schedules/schedule-record.js";
import { HISTORY_LIMIT } from "../schedules/schedule-store.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT, EXAMPLE_SCHEDULE } from "./examples.js";
import { checkedTargets, MAX_TARGETS } from "./schedule-targets.js";

const ScheduleIdSchema = z
  .string()
  .regex(/^sch_[0-9a-f]{24}$/, "schedule_id looks like sch_ followed by 24 hex digits")
  .describe("Schedule id (from schedule create or list).");

/** The input and example of the actions that name just a schedule. */
const ById = z.object({ schedule_id: ScheduleIdSchema });
const BY_ID_EXAMPLE = { schedule_id: EXAMPLE_SCHEDULE };

const fields = {
  name: z.string().min(1).max(128).describe("What the schedule is for."),
  cron_expr: z
    .string()
    .min(1)
    .max(128)
    .describe('Five-field cron: minute hour day-of-month month day-of-week ("0 * * * *": hourly).'),
  timezone: z.string().min(1).max(64).describe("IANA timezone the cron is read in (default UTC)."),
  prompt: z.string().min(1).describe("What each run sends the droid (at most 256 KiB encoded)."),
  targets: z
    .array(
      z.strictObject({
        project_id: ProjectIdSchema,
        workspace_id: WorkspaceIdSchema.optional().describe("Default: the project's default workspace."),
      }),
    )
    .min(1)
    .max(MAX_TARGETS)
    .describe("Where each run goes: [{project_id, workspace_id?}]."),
  overlap_behavior: z
    .enum(OVERLAP_BEHAVIORS)
    .describe(
      "When the previous run's session on a target is still busy: skip (recorded as skipped), queue " +
        `(wait until its turn completes; at most ${QUEUE_LIMIT} wait) or parallel (start anyway).`,
    ),
  session_behavior: z
    .enum(SESSION_BEHAVIORS)
    .describe(
      "resume: send the prompt to the workspace's running session (spawning one when none runs); new: always a new session.",
    ),
  enabled: z.boolean().describe("Whether the cron fires."),
};

/** Unwraps a schedule object's answer; one that holds no schedule is named by its id. */
function found<T>(scheduleId: string, result: Result<T>): T {
  if (!result.ok && result.error.code === "not_found" && result.error.message === NO_SCHEDULE) {
    throw new AppError("not_found", `no schedule ${scheduleId}`);
  }
  return unwrap(result);
}

function scheduleStub(ctx: ToolContext, scheduleId: string) {
  ctx.auditTarget(scheduleId);
  return objects.schedule(ctx.env, scheduleId);
}

export const scheduleTool = defineActionTool({
  name: "schedule",
  title: "Schedules",
  description:
    "Send a droid a prompt on a cron schedule, in one or more project workspaces. Each run uses the " +
    "authority of the token that created the schedule, checked at every run: if that token is revoked, " +
    "expires or may no longer write a target project, the run fails and the schedule disables itself.",
  actions: {
    create: action({
      description: "Create a schedule: a name, a five-field cron, a prompt and its targets.",
      access: "write",
      target: "project",
      timing: "sync",
      example: {
        name: "nightly-tests",
        cron_expr: "0 3 * * *",
        timezone: "Europe/Berlin",
        prompt: "Run the test suite and fix what fails.",
        targets: [{ project_id: EXAMPLE_PROJECT }],
        overlap_behavior: "skip",
      },
      input: z.object({
        ...fields,
        timezone: fields.timezone.optional(),
        overlap_behavior: fields.overlap_behavior.default("skip"),
        session_behavior: fields.session_behavior.default("new"),
        enabled: fields.enabled.default(true),
      }),
      async handler(args, ctx) {
        const timezone = args.timezone ?? DEFAULT_TIMEZONE;
        requireValidCron(args.cron_expr, timezone, Date.now());
        requireFits("message", args.prompt);
        const targets = await checkedTargets(ctx, args.targets);
        const scheduleId = `sch_${randomHex(12)}`;
        const directory = objects.scheduleDirectory(ctx.env);
        await directory.add(scheduleId, projectsOf(targets), Date.now());
        try {
          return unwrap(
            await scheduleStub(ctx, scheduleId).create({
              scheduleId,
              creator: { tokenId: ctx.principal.tokenId, issued: ctx.principal.issued === true },
              name: args.name,
              cronExpr: args.cron_expr,
              timezone,
              prompt: args.prompt,
              targets,
              overlap: args.overlap_behavior,
              sessionBehavior: args.session_behavior,
              enabled: args.enabled,
            }),
          );
        } catch (err) {
          await directory.remove(scheduleId);
          throw err;
        }
      },
    }),
    list: action({
      description:
        "List the schedules this token may see (all their projects readable), optionally of one project.",
      access: "read",
      target: "global",
      timing: "sync",
      example: {},
      input: z.object({
        project_id: ProjectIdSchema.optional().describe("Only schedules targeting this project."),
        cursor: z.string().max(512).optional().describe("next_cursor of the previous page."),
        limit: z.number().int().min(1).max(100).default(50),
      }),
      async handler(args, ctx) {
        const visible = visibleProjects(ctx.principal);
        const page = unwrap(
          await objects.scheduleDirectory(ctx.env).list({
            only: visible === null ? null : [...visible],
            projectId: args.project_id ?? null,
            cursor: args.cursor ?? null,
            limit: args.limit,
          }),
        );
        const infos = await Promise.all(
          page.schedule_ids.map((id) => objects.schedule(ctx.env, id).info(ctx.principal)),
        );
        return {
          schedules: infos.flatMap((r) => (r.ok ? [r.value] : [])),
          next_cursor: page.next_cursor,
        };
      },
    }),
    get: action({
      description: "A schedule's settings, next fire time, queued runs and last run.",
      access: "read",
      target: "project",
      timing: "sync",
      example: BY_ID_EXAMPLE,
      input: ById,
      async handler(args, ctx) {
        return found(args.schedule_id, await scheduleStub(ctx, args.schedule_id).info(ctx.principal));
      },
    }),
    history: action({
      description: `A schedule's runs, newest first (the last ${HISTORY_LIMIT} are kept): time, trigger, outcome per target.`,
      access: "read",
      target: "project",
      timing: "sync",
      example: { schedule_id: EXAMPLE_SCHEDULE, limit: 20 },
      input: z.object({
        schedule_id: ScheduleIdSchema,
        limit: z.number().int().min(1).max(HISTORY_LIMIT).default(50),
      }),
      async handler(args, ctx) {
        return found(
          args.schedule_id,
          await scheduleStub(ctx, args.schedule_id).history(ctx.principal, args.limit),
        );
      },
    }),
    update: action({
      description:
        "Change a schedule's name, cron, timezone, prompt, targets, behaviours or enabled flag (re-enabling checks its creator's authority).",
      access: "write",
      target: "project",
      timing: "sync",
      example: { schedule_id: EXAMPLE_SCHEDULE, enabled: false },
      input: z.object({
        schedule_id: ScheduleIdSchema,
        name: fields.name.optional(),
        cron_expr: fields.cron_expr.optional(),
        timezone: fields.timezone.optional(),
        prompt: fields.prompt.optional(),
        targets: fields.targets.optional(),
        overlap_behavior: fields.overlap_behavior.optional(),
        session_behavior: fields.session_behavior.optional(),
        enabled: fields.enabled.optional(),
      }),
      async handler({ schedule_id, ...args }, ctx) {
        if (Object.values(args).every((v) => v === undefined)) {
          throw new AppError("invalid_arguments", "give at least one setting to change");
        }
        const stub = scheduleStub(ctx, schedule_id);
        if (args.cron_expr !== undefined || args.timezone !== undefined) {
          const current = found(schedule_id, await stub.info(ctx.principal));
          requireValidCron(
            args.cron_expr ?? current.cron_expr,
            args.timezone ?? current.timezone,
            Date.now(),
          );
        }
        if (args.prompt !== undefined) requireFits("message", args.prompt);
        const targets = args.targets === undefined ? undefined : await checkedTargets(ctx, args.targets);
        const updated = found(
          schedule_id,
          await stub.update(ctx.principal, {
            name: args.name,
            cronExpr: args.cron_expr,
            timezone: args.timezone,
            prompt: args.prompt,
            targets,
            overlap: args.overlap_behavior,
            sessionBehavior: args.session_behavior,
            enabled: args.enabled,
          }),
        );
        if (targets !== undefined) {
          await objects.scheduleDirectory(ctx.env).setProjects(schedule_id, projectsOf(targets));
        }
        return updated;
      },
    }),
    trigger: action({
      description: "Run a schedule now (even when disabled), as its creator; answers the run.",
      access: "write",
      target: "project",
      timing: "async_medium",
      example: BY_ID_EXAMPLE,
      input: ById,
      async handler(args, ctx) {
        return found(args.schedule_id, await scheduleStub(ctx, args.schedule_id).trigger(ctx.principal));
      },
    }),
    delete: action({
      description: "Delete a schedule: no more runs; its history and queued runs go with it.",
      access: "write",
      target: "project",
      timing: "sync",
      example: BY_ID_EXAMPLE,
      input: ById,
      async handler(args, ctx) {
        const deleted = found(
          args.schedule_id,
          await scheduleStub(ctx, args.schedule_id).remove(ctx.principal),
        );
        await objects.scheduleDirectory(ctx.env).remove(args.schedule_id);
        return deleted;
      },
    }),
  },
});
