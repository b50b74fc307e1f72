import { z } from "zod";
import { AgentRuntimeSchema } from "../../../protocol/agent-runtimes.js";
import { ApprovalPolicySchema, ApprovalTimeoutSchema } from "../../../protocol/approvals.js";
import { CallerIdSchema, CallerToolDeclarationSchema } from "../../../protocol/caller-tools.js";
import { SessionIdSchema as SessionIdFormat } from "../../../protocol/ids.js";
import { NetworkPolicySchema } from "../../../protocol/network.js";
import { GitBranchSchema } from "../../../protocol/tunnel-projects.js";
import { AppError, unwrap } from "../errors.js";
import { withChildEvents } from "../flows/child-events.js";
import {
  callerDeclaration,
  requireFits,
  sessionStub,
  settled,
  spawnOrResume,
} from "../flows/session-spawn.js";
import { waitForEvents } from "../flows/wait-for-events.js";
import { objects } from "../objects/keys.js";
import {
  APPROVAL_POLICY_HELP,
  NETWORK_HELP,
  ProjectIdSchema,
  WorkspaceIdSchema,
} from "../projects/project-config.js";
import { CALLER_PRESENCE } from "../session/types.js";
import { action, defineActionTool } from "./define.js";
import { EXAMPLE_PROJECT, EXAMPLE_SESSION } from "./examples.js";

const SessionIdSchema = SessionIdFormat.describe("Session id returned by spawn.");

/** Caller tools may be declared top-level or inside `context` (both forms appear in the seeds). */
const callerFields = {
  caller_id: CallerIdSchema.optional().describe(
    "Your caller id; your tools appear to the droid as {caller_id}_{tool}.",
  ),
  caller_tools: CallerToolDeclarationSchema.optional().describe(
    "Tools you implement and lend to the droid: [{name, title?, description?, inputSchema?}]. Re-declaring replaces the list.",
  ),
  // Strict: anything else in context would be dropped unread, so it is refused.
  context: z
    .strictObject({
      caller_id: CallerIdSchema.optional(),
      caller_tools: CallerToolDeclarationSchema.optional(),
    })
    .optional()
    .describe("Session context: caller_id and caller_tools, instead of the top-level fields."),
  caller_presence: z
    .enum(CALLER_PRESENCE)
    .optional()
    .describe(
      "What your absence does to the droid's waiting calls: stream (default), they fail seconds after your " +
        "last event stream closes; deadline, they wait for your answer until their deadline (for callers that " +
        "come and go, e.g. one-shot CLI runs).",
    ),
};

const spawnFields = {
  project_id: ProjectIdSchema,
  workspace_id: WorkspaceIdSchema.optional().describe(
    "Workspace to run in (default: the project's default workspace).",
  ),
  create_workspace: z
    .boolean()
    .default(false)
    .describe("Create the workspace (a new one with a generated id when workspace_id is absent)."),
  branch: z
    .union([z.literal(true), GitBranchSchema])
    .optional()
    .describe(
      "Work on a branch of its own, in a new workspace the host clones for it: a branch name, or true for oubliette/<session short id>. Needs the project's remote_url (or init_git).",
    ),
  base: GitBranchSchema.optional().describe(
    "With branch: the remote's branch it starts from (default: the remote's default branch).",
  ),
  new_session: z
    .boolean()
    .default(false)
    .describe("Start a new session even if one runs in the workspace (default: resume that one)."),
  relocate: z
    .boolean()
    .optional()
    .describe(
      "If the project's host is lost, revoked or not connected, start the project on another host now. Its workspaces stay on the old host: here the workspace begins empty, or cloned from the project's remote_url.",
    ),
  agent: AgentRuntimeSchema.optional().describe(
    `Agent runtime (default: the project's default_agent): ${AgentRuntimeSchema.options.join(", ")}.`,
  ),
  model: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("Model for the agent (default: the project's default_model)."),
  oubliette_access: z
    .enum(["none", "project:ro", "project"])
    .default("none")
    .describe(
      "Give the droid a key for Oubliette's own tools (oubliette_* tools), scoped to this project, ending with the session.",
    ),
  oubliette_api_key: z
    .string()
    .max(512)
    .optional()
    .describe("Or give the droid a key you hold (it can do what that key allows, never more)."),
  external_id: z.string().max(256).optional().describe("Your own id for this session (shown in listings)."),
  source: z.string().max(64).optional().describe("What started it (e.g. a scheduler or app name)."),
};

export const sessionTool = defineActionTool({
  name: "session",
  title: "Droid sessions",
  description:
    "Start a droid in a project's container, send it messages, lend it your tools and read its events. " +
    "Events (including caller_tool_request) also arrive as notifications/message on your MCP stream; " +
    "if you cannot see those, poll events with wait_seconds, or pending, and answer with caller_tool_response.",
  actions: {
    spawn: action({
      description:
        "Start a session (a droid in the project's container) in a workspace, or resume the one running there.",
      access: "write",
      target: "project",
      timing: "async_medium",
      noWait: (args) => !args.wait,
      example: { project_id: EXAMPLE_PROJECT, prompt: "Run the tests and fix what fails." },
      input: z.object({
        ...spawnFields,
        prompt: z.string().optional().describe("First message for the droid (at most 256 KiB encoded)."),
        ...callerFields,
        caller_timeout_seconds: z
          .number()
          .int()
          .positive()
          .optional()
          .describe("How long the droid waits for your answer to one of its calls (default 60)."),
        approval_policy: ApprovalPolicySchema.optional().describe(
          `This session's own approval policy, applied with its project's (the stricter verdict wins: a session can only ask more). ${APPROVAL_POLICY_HELP}`,
        ),
        approval_timeout_seconds: ApprovalTimeoutSchema.optional().describe(
          "How long its approval requests wait for an answer before they are denied (default: the project's).",
        ),
        network: NetworkPolicySchema.optional().describe(
          `This session's own network policy, applied with its project's (a connection must pass both: a session can only reach less). ${NETWORK_HELP}`,
        ),
        wait: z
          .boolean()
          .default(true)
          .describe(
            "false: answer a job_id at once instead of waiting for the droid to start (job wait answers the session).",
          ),
      }),
      handler: spawnOrResume,
    }),
    message: action({
      description:
        "Send a message to a session (by session_id), or to the workspace's running session of a project " +
        "(by project_id, spawning one when none runs); may also re-declare your caller tools.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION, message: "Now update the changelog." },
      input: z.object({
        session_id: SessionIdSchema.optional(),
        project_id: ProjectIdSchema.optional(),
        workspace_id: WorkspaceIdSchema.optional().describe(
          "With project_id: the workspace (default: default).",
        ),
        message: z.string().optional().describe("Message for the droid (at most 256 KiB encoded)."),
        ...callerFields,
      }),
      async handler(args, ctx) {
        if (args.message !== undefined) requireFits("message", args.message);
        if ((args.session_id === undefined) === (args.project_id === undefined)) {
          throw new AppError("invalid_arguments", "give session_id or project_id (not both)");
        }
        if (args.project_id !== undefined) {
          return spawnOrResume(
            {
              ...args,
              project_id: args.project_id,
              prompt: args.message,
              create_workspace: false,
              new_session: false,
            },
            ctx,
          );
        }
        const sessionId = args.session_id as string;
        const caller = callerDeclaration(args);
        if (args.message === undefined && caller === null && args.caller_presence === undefined) {
          throw new AppError("invalid_arguments", "give a message, caller tools or caller_presence");
        }
        const result = await sessionStub(ctx, sessionId).sendMessage({
          principal: ctx.principal,
          message: args.message ?? null,
          caller,
          callerPresence: args.caller_presence ?? null,
          via: ctx.mcp?.via ?? null,
        });
        return settled(ctx, sessionId, result);
      },
    }),
    interrupt: action({
      description:
        "Interrupt the droid's turn in flight (the session and its workspace stay; send a message to go on). " +
        "A completion event with stop_reason interrupted follows.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION },
      input: z.object({ session_id: SessionIdSchema }),
      async handler(args, ctx) {
        const result = await sessionStub(ctx, args.session_id).interrupt(ctx.principal);
        return settled(ctx, args.session_id, result);
      },
    }),
    get: action({
      description:
        "Get a session's status, workspace, host, caller tools and the caller tool requests waiting for your " +
        "answer (open_requests).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION },
      input: z.object({ session_id: SessionIdSchema }),
      async handler(args, ctx) {
        const result = await sessionStub(ctx, args.session_id).getInfo(ctx.principal, ctx.mcp?.via ?? null);
        return settled(ctx, args.session_id, result);
      },
    }),
    list: action({
      description:
        "List a project's sessions, oldest first, optionally by status or owner token (paginated).",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, status: "running" },
      input: z.object({
        project_id: ProjectIdSchema,
        status: z.enum(["starting", "running", "exited", "failed", "ended", "lost"]).optional(),
        owner: z.string().max(128).optional().describe("Only sessions spawned by this token id."),
        cursor: z.string().max(512).optional().describe("next_cursor of the previous page."),
        limit: z.number().int().min(1).max(200).default(50),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        return unwrap(
          await objects.project(ctx.env, args.project_id).listSessions({
            status: args.status ?? null,
            ownerTokenId: args.owner ?? null,
            cursor: args.cursor ?? null,
            limit: args.limit,
          }),
        );
      },
    }),
    events: action({
      description:
        "Read the session's events from since_index on (each event has an index); pass next_index as the " +
        "next since_index. With wait_seconds it waits (sync, up to 50 s) until an event comes: poll it this " +
        "way to see caller_tool_request events if your client does not show you notifications.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION, since_index: 0 },
      input: z.object({
        session_id: SessionIdSchema,
        since_index: z
          .number()
          .int()
          .nonnegative()
          .default(0)
          .describe("First event index to return (default 0)."),
        limit: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(100)
          .describe("Most events to return (default 100)."),
        wait_seconds: z
          .number()
          .min(0)
          .max(50)
          .default(0)
          .describe(
            "When no event from since_index on exists yet, wait up to this long for one (default 0: answer at once).",
          ),
        include_children: z
          .boolean()
          .default(false)
          .describe(
            "Merge in the events of the sessions this session's droid started (each names its session).",
          ),
        children_since: z
          .record(z.string().max(64), z.number().int().nonnegative())
          .default({})
          .describe("With include_children: children_next_index of the previous page."),
      }),
      async handler(args, ctx) {
        const stub = sessionStub(ctx, args.session_id);
        const via = ctx.mcp?.via ?? null;
        const result = await waitForEvents(
          (waitMs) => stub.readEvents(ctx.principal, args.since_index, args.limit, via, waitMs),
          { since: args.since_index, waitSeconds: args.wait_seconds, mcp: ctx.mcp },
        );
        const own = settled(ctx, args.session_id, result);
        if (!args.include_children) return own;
        return withChildEvents(ctx, args.session_id, own, {
          limit: args.limit,
          childrenSince: args.children_since,
          via,
        });
      },
    }),
    pending: action({
      description:
        "List the droid's caller tool requests that wait for your answer (request_id, tool, arguments, " +
        "deadline); answer each with caller_tool_response.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION },
      input: z.object({ session_id: SessionIdSchema }),
      async handler(args, ctx) {
        const result = await sessionStub(ctx, args.session_id).pending(ctx.principal, ctx.mcp?.via ?? null);
        return settled(ctx, args.session_id, result);
      },
    }),
    end: action({
      description: "End the session: stop its droid (its workspace stays).",
      access: "write",
      target: "project",
      timing: "sync",
      example: { session_id: EXAMPLE_SESSION, reason: "done for today" },
      input: z.object({
        session_id: SessionIdSchema,
        reason: z
          .string()
          .max(1000)
          .default("ended by the caller")
          .describe("Why (recorded in the event log)."),
      }),
      async handler(args, ctx) {
        return unwrap(await sessionStub(ctx, args.session_id).end(ctx.principal, args.reason));
      },
    }),
    cleanup: action({
      description: "Forget ended sessions of a project older than max_age_hours (their events included).",
      access: "write",
      target: "project",
      timing: "sync",
      example: { project_id: EXAMPLE_PROJECT, max_age_hours: 24 },
      input: z.object({
        project_id: ProjectIdSchema,
        max_age_hours: z
          .number()
          .min(0)
          .max(24 * 365)
          .default(24),
      }),
      async handler(args, ctx) {
        ctx.authorizeProject(args.project_id);
        const removed = unwrap(await objects.project(ctx.env, args.project_id).cleanup(args.max_age_hours));
        await Promise.all(removed.map((id) => objects.session(ctx.env, id).purge()));
        return { project_id: args.project_id, removed: removed.length, session_ids: removed };
      },
    }),
  },
});
