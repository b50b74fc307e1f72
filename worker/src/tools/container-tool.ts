import { z } from "zod";
import {
  ContainerExecResultSchema,
  ContainerLogsResultSchema,
  ProjectEnsureResultSchema,
} from "../../../protocol/tunnel-projects.js";
import { unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import {
  DEFAULT_WORKSPACE,
  ProjectIdSchema,
  projectSpec,
  workspaceGitParams,
  workspaceSetup,
} from "../projects/project-config.js";
import { EmptyResultSchema, hostProgress, onProjectHost, TunnelMethod } from "../projects/project-host.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";

/** How long past an exec's timeout its host may take to answer (killing it, collecting output). */
const EXEC_ANSWER_GRACE_MS = 30_000;

export const containerTool = defineActionTool({
  name: "container",
  title: "Project containers",
  description:
    "A project's container (one per project, on its host; sessions run inside it): start, stop, run a command in it, read its logs.",
  actions: {
    start: action({
      description: "Start the project's container (spawn also starts it on demand).",
      access: "write",
      target: "project",
      timing: "async_medium",
      example: { project_id: EXAMPLE_PROJECT },
      input: z.object({ project_id: ProjectIdSchema }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const config = unwrap(await objects.project(ctx.env, args.project_id).info());
        // The default workspace is there (git-initialised or cloned the first time) before the container.
        const setup = workspaceSetup(config, DEFAULT_WORKSPACE);
        const workspace = {
          workspace_id: DEFAULT_WORKSPACE,
          ...workspaceGitParams(setup),
          ...(config.limits.disk_mb !== null ? { disk_mb: config.limits.disk_mb } : {}),
        };
        await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.workspaceCreate,
          workspace,
          EmptyResultSchema,
          {
            place: true,
          },
        );
        const started = await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.projectEnsure,
          { spec: projectSpec(config) },
          ProjectEnsureResultSchema,
          // An image's pull on the host, line by line, is the job's progress (or the call's).
          { place: true, onProgress: hostProgress(ctx) },
        );
        return { project_id: args.project_id, ...started };
      },
    }),
    stop: action({
      description: "Stop the project's container; its running sessions end (their workspaces stay).",
      access: "write",
      target: "project",
      timing: "async_short",
      example: { project_id: EXAMPLE_PROJECT },
      input: z.object({
        project_id: ProjectIdSchema,
        reason: z
          .string()
          .max(1000)
          .default("the container was stopped")
          .describe("Why (the sessions' end reason)."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        await onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.projectStop,
          { reason: args.reason },
          EmptyResultSchema,
        );
        return { project_id: args.project_id, stopped: true };
      },
    }),
    exec: action({
      description:
        "Run a command in the project's container: an argv array runs as is; a string runs with sh -c inside the container. Returns exit code and output. Cancelling its job kills the command.",
      access: "write",
      target: "project",
      timing: "async_medium",
      example: {
        project_id: EXAMPLE_PROJECT,
        command: ["git", "status", "--short"],
        cwd: "/workspace/default",
      },
      input: z.object({
        project_id: ProjectIdSchema,
        command: z
          .union([z.string().min(1).max(32_768), z.array(z.string().max(32_768)).min(1).max(256)])
          .describe("argv array, or a shell command line (run by sh inside the container)."),
        cwd: z
          .string()
          .max(4096)
          .startsWith("/")
          .optional()
          .describe("Working directory in the container (default /workspace)."),
        timeout_seconds: z
          .number()
          .int()
          .min(1)
          .max(600)
          .default(60)
          .describe("Killed after this long (default 60)."),
        output_limit_bytes: z
          .number()
          .int()
          .min(1)
          .max(1_048_576)
          .default(65_536)
          .describe("Output kept per stream (default 64 KiB)."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        // A string is the user's own shell line, run by a shell inside their container; nothing
        // user-given ever reaches a shell on the host (the host passes argv to the Engine API).
        const command = typeof args.command === "string" ? ["sh", "-c", args.command] : args.command;
        return onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.containerExec,
          {
            command,
            ...(args.cwd ? { cwd: args.cwd } : {}),
            timeout_ms: args.timeout_seconds * 1000,
            output_limit_bytes: args.output_limit_bytes,
          },
          ContainerExecResultSchema,
          // The host answers once the command ends or is killed at its timeout; a cancel kills it.
          { signal: ctx.signal, timeoutMs: args.timeout_seconds * 1000 + EXEC_ANSWER_GRACE_MS },
        );
      },
    }),
    logs: action({
      description: "The tail of the project container's output (the runner and every agent's stderr).",
      // The seed's table puts every container action under project + write.
      access: "write",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, tail: 100 },
      input: z.object({
        project_id: ProjectIdSchema,
        tail: z.number().int().min(1).max(10_000).default(200).describe("Most lines (default 200)."),
        since: z.iso.datetime().optional().describe("Only lines after this time (ISO 8601)."),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const since = args.since === undefined ? undefined : Math.floor(Date.parse(args.since) / 1000);
        return onProjectHost(
          ctx.env,
          args.project_id,
          TunnelMethod.containerLogs,
          { tail: args.tail, ...(since === undefined ? {} : { since }) },
          ContainerLogsResultSchema,
        );
      },
    }),
  },
});
