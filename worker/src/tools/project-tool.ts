import { z } from "zod";
import {
  DEFAULT_NETWORK_POLICY,
  DEFAULT_SETUP_NETWORK_POLICY,
  NETWORK_PRESETS,
} from "../../../protocol/network.js";
import { can, visibleProjects } from "../auth/access.js";
import { randomHex } from "../auth/digest.js";
import { config } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { revokeGrantTokens } from "../oauth/revoke.js";
import { objects } from "../objects/keys.js";
import {
  AGENTS,
  CONTAINER_TYPES,
  configProblem,
  DEFAULT_LIMITS,
  NETWORK_HELP,
  ProjectConfigSchema,
  ProjectIdSchema,
  ProjectUpdateSchema,
} from "../projects/project-config.js";
import { APPROVAL_OPTIONS } from "./approval-options.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT } from "./examples.js";
import { type ObjectJsonSchema, toJsonSchema } from "./json-schema.js";

export const projectTool = defineActionTool({
  name: "project",
  title: "Projects",
  description:
    "Projects own a container (started on demand) and its workspaces. Create, list, inspect, delete; options lists what create accepts.",
  actions: {
    create: action({
      description: "Create a project (with a default workspace, git-initialised unless init_git is false).",
      access: "write",
      target: "global",
      timing: "sync",
      example: { name: "my-service", description: "The billing service", workspace_isolation: true },
      input: ProjectConfigSchema,
      async handler(args, ctx) {
        const problem = configProblem(args);
        if (problem) throw new AppError("invalid_arguments", problem);
        const projectId = `prj_${randomHex(12)}`;
        ctx.auditTarget(projectId);
        unwrap(await objects.projectDirectory(ctx.env).reserve(projectId, args.name));
        try {
          return unwrap(
            await objects.project(ctx.env, projectId).init({
              projectId,
              config: { ...args, default_agent: args.default_agent ?? config(ctx.env).defaultAgent },
              createdBy: ctx.principal.tokenId,
            }),
          );
        } catch (err) {
          await objects.projectDirectory(ctx.env).remove(projectId);
          throw err;
        }
      },
    }),
    list: action({
      description: "List the projects this token may see.",
      access: "read",
      target: "global",
      timing: "sync",
      example: {},
      input: z.object({}),
      async handler(_args, ctx) {
        const visible = visibleProjects(ctx.principal);
        const projects = await objects.projectDirectory(ctx.env).list(visible === null ? null : [...visible]);
        return { projects };
      },
    }),
    get: action({
      description: "A project's config, default workspace, session counts and host.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT },
      input: z.object({ project_id: ProjectIdSchema }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const info = unwrap(await objects.project(ctx.env, args.project_id).info());
        // The registry knows where the project is placed (the project hears of it only on container start).
        const placed = await objects.hostRegistry(ctx.env).projectHost(args.project_id);
        return {
          ...info,
          host_id: placed?.hostId ?? info.host_id,
          disk: diskBound(info.limits.disk_mb ?? null, placed?.disk ?? null),
        };
      },
    }),
    update: action({
      description:
        "Change a project's settings that need no new container: description, default_model, protected_paths, approvals, network, setup. What is absent stays; a bad value changes nothing. The project's host applies a new network policy at once.",
      access: "write",
      target: "project",
      timing: "sync",
      example: {
        project_id: EXAMPLE_PROJECT,
        network: { mode: "allowlist", presets: ["package-registries"], allow: ["docs.example.com"] },
        setup: ["npm ci"],
      },
      input: ProjectUpdateSchema.extend({ project_id: ProjectIdSchema }),
      async handler(args, ctx) {
        // Only the settings: the action and the project are not part of the patch.
        const { action: _action, project_id, ...patch } = args as typeof args & { action?: string };
        ctx.authorizeProject(project_id);
        if (Object.keys(patch).length === 0)
          throw new AppError("invalid_arguments", "give at least one setting to change");
        return unwrap(await objects.project(ctx.env, project_id).update(patch));
      },
    }),
    delete: action({
      description:
        "Delete a project, its workspaces and its project-scoped tokens. Refused while sessions run unless force is true.",
      access: "write",
      target: "project",
      timing: "async_short",
      example: { project_id: EXAMPLE_PROJECT, force: false },
      input: z.object({
        project_id: ProjectIdSchema,
        force: z.boolean().default(false).describe("End running sessions first instead of refusing."),
      }),
      confirm: (args) =>
        `Delete project ${args.project_id} with its workspaces and project tokens` +
        `${args.force ? ", ending its running sessions" : ""}? This cannot be undone.`,
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const deleted = unwrap(
          await objects
            .project(ctx.env, args.project_id)
            .delete({ force: args.force, by: ctx.principal.tokenId }),
        );
        await objects.projectDirectory(ctx.env).remove(args.project_id);
        const revoked = await objects.tokens(ctx.env).revokeProject(args.project_id);
        await revokeGrantTokens(ctx.env, revoked.grants, ctx.principal.tokenId, "project_deleted");
        // Its container and workspaces on its host go now, or when that host is back.
        const removed = await objects.hostRegistry(ctx.env).removeProject({ projectId: args.project_id });
        return {
          ...deleted,
          deleted: true,
          revoked_tokens: revoked.tokens,
          revoked_grants: revoked.grants.length,
          host_cleanup: removed.ok ? "done" : `pending: ${removed.error.message}`,
        };
      },
    }),
    options: action({
      description:
        "What project create accepts: its fields (create_schema, a JSON Schema), container types, agents, default limits, approval policies (with examples), network policies and their presets.",
      access: "read",
      target: "global",
      timing: "sync",
      example: {},
      input: z.object({}),
      async handler(_args, ctx) {
        return {
          create_schema: createSchema(),
          container_types: CONTAINER_TYPES,
          agents: AGENTS,
          default_limits: DEFAULT_LIMITS,
          approvals: APPROVAL_OPTIONS,
          network: {
            help: NETWORK_HELP,
            default: DEFAULT_NETWORK_POLICY,
            setup_default: DEFAULT_SETUP_NETWORK_POLICY,
            presets: NETWORK_PRESETS,
          },
          can_create: can(ctx.principal, "write", { kind: "global" }),
        };
      },
    }),
  },
});

let createSchemaMemo: ObjectJsonSchema | null = null;

/** The JSON Schema of `project create`'s arguments, from the same schema that checks them. */
function createSchema(): ObjectJsonSchema {
  createSchemaMemo ??= toJsonSchema(ProjectConfigSchema);
  return createSchemaMemo;
}

/**
 * The disk bound a project has: its own `limits.disk_mb`, else its host's default; and how its
 * host keeps it (a filesystem of that size, or measuring). Unknown until the project has a host.
 */
function diskBound(
  own: number | null,
  host: { mode: "filesystem" | "measured"; default_mb: number } | null,
): { limit_mb: number | null; source: "project" | "host_default" | "unknown"; mode: string | null } {
  if (own !== null) return { limit_mb: own, source: "project", mode: host?.mode ?? null };
  if (host !== null) return { limit_mb: host.default_mb, source: "host_default", mode: host.mode };
  return { limit_mb: null, source: "unknown", mode: null };
}
