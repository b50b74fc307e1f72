import { z } from "zod";
import { visibleProjects } from "../auth/access.js";
import { unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { mayUseJob, requireJobAccess } from "../jobs/job-access.js";
import { JobIdSchema, type JobInfo, JobStatusSchema } from "../jobs/job-record.js";
import { waitForJob } from "../jobs/wait-for-job.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema } from "../projects/project-config.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_JOB, EXAMPLE_PROJECT } from "./examples.js";

/** The job, once the caller may `access` it. */
async function jobFor(ctx: ToolContext, jobId: string, access: "read" | "write"): Promise<JobInfo> {
  const info = unwrap(await objects.job(ctx.env, jobId).get());
  requireJobAccess(ctx.principal, access, info);
  return info;
}

const ByJob = { job_id: JobIdSchema };

export const jobTool = defineActionTool({
  name: "job",
  title: "Jobs (long-running work)",
  description:
    "Work that can outlast a call runs as a job: a call of it waits up to its timing class's bound, then " +
    "answers {job_id, status}. Read a job's status and outcome, wait for it, list them (status=failed finds " +
    "failures), cancel one. Outcomes are kept for 24 hours. A job's start, progress and end also arrive " +
    "as notifications/message (logger oubliette.job) on the MCP stream of the session that started it.",
  actions: {
    get: action({
      description: "A job's status, and its outcome once it ended (result, or error with a code).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { job_id: EXAMPLE_JOB },
      input: z.object(ByJob),
      handler: (args, ctx) => jobFor(ctx, args.job_id, "read"),
    }),
    list: action({
      description: "Jobs newest first, of one project or every project the token may read (paginated).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, status: "failed" },
      input: z.object({
        project_id: ProjectIdSchema.optional().describe("Only this project's jobs."),
        status: JobStatusSchema.optional().describe("Only jobs with this status (failed: what went wrong)."),
        cursor: z.string().max(512).optional().describe("next_cursor of the previous page."),
        limit: z.number().int().min(1).max(100).default(20),
      }),
      async handler(args, ctx) {
        if (args.project_id !== undefined) ctx.authorizeProject(args.project_id);
        const visible = visibleProjects(ctx.principal);
        const projects = args.project_id !== undefined ? [args.project_id] : visible && [...visible];
        const page = unwrap(
          await objects.jobDirectory(ctx.env).list({
            projects,
            global: args.project_id === undefined && visible === null,
            status: args.status ?? null,
            cursor: args.cursor ?? null,
            limit: args.limit,
          }),
        );
        // Without results (job get has them): an exec's output is large.
        const infos = await Promise.all(
          page.jobs.map((entry) => objects.job(ctx.env, entry.jobId).get(false)),
        );
        const jobs = infos
          .flatMap((info) => (info.ok ? [info.value] : []))
          .filter((info) => mayUseJob(ctx.principal, "read", info));
        return { jobs, next_cursor: page.next_cursor };
      },
    }),
    wait: action({
      description:
        "Wait until the job ends (or wait_seconds pass, with progress meanwhile) and answer it as get does.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { job_id: EXAMPLE_JOB, wait_seconds: 30 },
      input: z.object({
        ...ByJob,
        wait_seconds: z
          .number()
          .int()
          .min(0)
          .max(120)
          .default(30)
          .describe("Longest wait (default 30, at most 120); the job goes on after it."),
      }),
      async handler(args, ctx) {
        await jobFor(ctx, args.job_id, "read");
        const waited = await waitForJob(ctx.env, args.job_id, {
          boundMs: args.wait_seconds * 1000,
          mcp: ctx.mcp,
          signal: ctx.signal,
          principal: ctx.principal,
        });
        return waited.info;
      },
    }),
    cancel: action({
      description:
        "Cancel a job: it ends as cancelled, and its work is aborted where it can be (a container exec is " +
        "killed on the host); cancel.work says whether the work stopped or runs on to its end.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { job_id: EXAMPLE_JOB, reason: "not needed any more" },
      input: z.object({
        ...ByJob,
        reason: z.string().max(1000).default("cancelled by the caller").describe("Why (kept with the job)."),
      }),
      async handler(args, ctx) {
        ctx.auditTarget(args.job_id);
        await jobFor(ctx, args.job_id, "write");
        return unwrap(await objects.job(ctx.env, args.job_id).cancel(args.reason));
      },
    }),
  },
});
