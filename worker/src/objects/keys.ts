import type { Env } from "../env.js";

/**
 * Every Durable Object's key, in one place. Per-item objects are named by their item's id;
 * directories and registries are singletons named `global`.
 */
const GLOBAL = "global";

export const objects = {
  /** The session's hot path: caller, pending calls, event log, fan-out, session tunnel. */
  session: (env: Env, sessionId: string) => env.SESSIONS.get(env.SESSIONS.idFromName(sessionId)),
  /** One MCP transport session (Mcp-Session-Id). */
  mcpSession: (env: Env, mcpSessionId: string) =>
    env.MCP_SESSIONS.get(env.MCP_SESSIONS.idFromName(mcpSessionId)),
  /** A project: config, session and workspace index, container state. */
  project: (env: Env, projectId: string) => env.PROJECTS.get(env.PROJECTS.idFromName(projectId)),
  /** Connected hosts, placement, drain. */
  hostRegistry: (env: Env) => env.HOSTS.get(env.HOSTS.idFromName(GLOBAL)),
  /** Tokens by hash (lookup) and by id (list, revoke). */
  tokens: (env: Env) => env.TOKENS.get(env.TOKENS.idFromName(GLOBAL)),
  /** Project names and ids, for listing and unique names. */
  projectDirectory: (env: Env) => env.PROJECT_DIRECTORY.get(env.PROJECT_DIRECTORY.idFromName(GLOBAL)),
  /** Every mutating call, for admins to read. */
  audit: (env: Env) => env.AUDIT.get(env.AUDIT.idFromName(GLOBAL)),
  /** One schedule: its settings, alarm, run history and queued runs. */
  schedule: (env: Env, scheduleId: string) => env.SCHEDULES.get(env.SCHEDULES.idFromName(scheduleId)),
  /** Schedule ids and their projects, for `schedule list`. */
  scheduleDirectory: (env: Env) => env.SCHEDULE_DIRECTORY.get(env.SCHEDULE_DIRECTORY.idFromName(GLOBAL)),
  /** One job: its state, its work (run from its alarm) and, for a day after, its outcome. */
  job: (env: Env, jobId: string) => env.JOBS.get(env.JOBS.idFromName(jobId)),
  /** Job ids by project and status, for `job list`. */
  jobDirectory: (env: Env) => env.JOB_DIRECTORY.get(env.JOB_DIRECTORY.idFromName(GLOBAL)),
};
