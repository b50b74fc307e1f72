import { z } from "zod";
import { type UsageTotals, ZERO_USAGE } from "../../../protocol/usage.js";
import { project, requireAccess, visibleProjects } from "../auth/access.js";
import { unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema } from "../projects/project-config.js";
import type { ProjectUsage } from "../projects/project-do.js";
import { utcDay } from "../projects/usage-store.js";
import { defineTool } from "./define.js";

/** Most sessions a report lists (the most costly). */
const MAX_SESSIONS = 200;
/** Projects asked at once. */
const BATCH = 20;

function add(a: UsageTotals, b: UsageTotals): UsageTotals {
  return {
    requests: a.requests + b.requests,
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cost_usd: a.cost_usd + b.cost_usd,
  };
}

function only(u: UsageTotals): UsageTotals {
  return {
    requests: u.requests,
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cost_usd: u.cost_usd,
  };
}

export const usageTool = defineTool({
  name: "usage",
  title: "Model usage",
  description:
    "Model use (requests, tokens, estimated cost) of the projects this token may read, or of one project: " +
    "totals, per project, per UTC day and per session (the most costly first), over the last days.",
  action: {
    description: "Report model usage.",
    access: "read",
    target: "global",
    timing: "sync",
    example: { days: 7 },
    input: z.object({
      project_id: ProjectIdSchema.optional().describe(
        "Only this project (default: every project you may read).",
      ),
      days: z.number().int().min(1).max(366).default(30).describe("How many days back, today included."),
    }),
    async handler(args, ctx) {
      const since = Date.now() - (args.days - 1) * 86_400_000;
      const sinceDay = utcDay(since);
      let projects: { project_id: string; name: string }[];
      if (args.project_id !== undefined) {
        // The tool is global (a report over every project one may read); one project needs read on it.
        requireAccess(ctx.principal, "read", project(args.project_id), "read the usage of");
        const info = unwrap(await objects.project(ctx.env, args.project_id).info());
        projects = [{ project_id: args.project_id, name: info.name }];
      } else {
        const visible = visibleProjects(ctx.principal);
        projects = await objects.projectDirectory(ctx.env).list(visible === null ? null : [...visible]);
      }
      const reports: { project_id: string; name: string; usage: ProjectUsage }[] = [];
      for (let i = 0; i < projects.length; i += BATCH) {
        const batch = projects.slice(i, i + BATCH);
        const answers = await Promise.all(
          batch.map((p) => objects.project(ctx.env, p.project_id).usage(sinceDay, MAX_SESSIONS)),
        );
        // A project deleted meanwhile has no report: it is left out.
        answers.forEach((answer, j) => {
          const project = batch[j];
          if (answer.ok && project) reports.push({ ...project, usage: answer.value });
        });
      }
      const days = new Map<string, UsageTotals>();
      let totals = ZERO_USAGE;
      const byProject = reports.map(({ project_id, name, usage }) => {
        let sum = ZERO_USAGE;
        for (const day of usage.by_day) {
          sum = add(sum, day);
          days.set(day.day, add(days.get(day.day) ?? ZERO_USAGE, day));
        }
        totals = add(totals, sum);
        return { project_id, name, ...only(sum) };
      });
      const sessions = reports
        .flatMap(({ project_id, usage }) => usage.sessions.map((s) => ({ ...s, project_id })))
        .sort((a, b) => b.cost_usd - a.cost_usd || a.session_id.localeCompare(b.session_id))
        .slice(0, MAX_SESSIONS);
      return {
        since: new Date(`${sinceDay}T00:00:00Z`).toISOString(),
        totals: only(totals),
        by_project: byProject.filter((p) => p.requests > 0 || p.cost_usd > 0),
        by_day: [...days.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([day, u]) => ({ day, ...only(u) })),
        sessions,
      };
    },
  },
});
