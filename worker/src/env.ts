import { z } from "zod";
import { AgentRuntimeSchema, DEFAULT_AGENT_RUNTIME } from "../../protocol/agent-runtimes.js";
import type { AuditLogDurableObject } from "./audit/audit-log-do.js";
import type { HostRegistryDurableObject } from "./hosts/host-registry-do.js";
import type { JobDirectoryDurableObject } from "./jobs/job-directory-do.js";
import type { JobDurableObject } from "./jobs/job-do.js";
import type { McpSessionDurableObject } from "./mcp/mcp-session-do.js";
import type { ProjectDirectoryDurableObject } from "./projects/project-directory-do.js";
import type { ProjectDurableObject } from "./projects/project-do.js";
import type { ScheduleDirectoryDurableObject } from "./schedules/schedule-directory-do.js";
import type { ScheduleDurableObject } from "./schedules/schedule-do.js";
import type { SessionDurableObject } from "./session/session-do.js";
import type { TokenDirectoryDurableObject } from "./tokens/token-directory-do.js";

/** Bindings and configuration of the Worker (wrangler.toml `[vars]`, secrets, `.dev.vars`). */
export interface Env {
  SESSIONS: DurableObjectNamespace<SessionDurableObject>;
  MCP_SESSIONS: DurableObjectNamespace<McpSessionDurableObject>;
  HOSTS: DurableObjectNamespace<HostRegistryDurableObject>;
  PROJECTS: DurableObjectNamespace<ProjectDurableObject>;
  PROJECT_DIRECTORY: DurableObjectNamespace<ProjectDirectoryDurableObject>;
  TOKENS: DurableObjectNamespace<TokenDirectoryDurableObject>;
  AUDIT: DurableObjectNamespace<AuditLogDurableObject>;
  SCHEDULES: DurableObjectNamespace<ScheduleDurableObject>;
  SCHEDULE_DIRECTORY: DurableObjectNamespace<ScheduleDirectoryDurableObject>;
  JOBS: DurableObjectNamespace<JobDurableObject>;
  JOB_DIRECTORY: DurableObjectNamespace<JobDirectoryDurableObject>;
  /** OAuth storage of `@cloudflare/workers-oauth-provider` (clients, grants, tokens: hashed). */
  OAUTH_KV: KVNamespace;
  /** Dynamic Client Registrations per client address (Workers Rate Limiting). */
  OAUTH_REGISTER_LIMIT?: RateLimit;
  /** Admin caller token (secret). Or give OUBLIETTE_ADMIN_TOKEN_SHA256 to keep only its hash. */
  OUBLIETTE_ADMIN_TOKEN?: string;
  OUBLIETTE_ADMIN_TOKEN_SHA256?: string;
  /** Token host-agents present (secret). Or OUBLIETTE_HOST_TOKEN_SHA256. */
  OUBLIETTE_HOST_TOKEN?: string;
  OUBLIETTE_HOST_TOKEN_SHA256?: string;
  /**
   * Key (≥ 32 characters, secret) that signs the `requestState` of MCP input-required results.
   * Unset: a random key kept by the token directory.
   */
  OUBLIETTE_REQUEST_STATE_KEY?: string;
  /** JSON list of extra caller tokens by hash: [{"id","sha256","scopes":[...]}]. */
  OUBLIETTE_STATIC_TOKENS?: string;
  OUBLIETTE_CALLER_TIMEOUT_MS?: string;
  OUBLIETTE_MAX_CALLER_TIMEOUT_MS?: string;
  OUBLIETTE_CALLER_GRACE_MS?: string;
  OUBLIETTE_KEEPALIVE_MS?: string;
  OUBLIETTE_ALLOWED_ORIGINS?: string;
  OUBLIETTE_HOST_ACK_TIMEOUT_MS?: string;
  OUBLIETTE_HOST_WAIT_MS?: string;
  /** Comma-separated origins the Worker is served at (Host and Origin are checked against them). */
  OUBLIETTE_PUBLIC_ORIGINS?: string;
  OUBLIETTE_HOST_GRACE_MS?: string;
  OUBLIETTE_DEFAULT_AGENT?: string;
  OUBLIETTE_RECONNECT_BUDGET_MS?: string;
  OUBLIETTE_JOB_SHORT_WAIT_MS?: string;
  OUBLIETTE_JOB_MEDIUM_WAIT_MS?: string;
  OUBLIETTE_TASK_SHORTCUT_MS?: string;
  OUBLIETTE_MESSAGE_NOTICE_MS?: string;
  /**
   * Local development only: "1" lets OAuth clients whose metadata document (CIMD client_id URL) is
   * on a loopback or private address sign in. Deployed, such client_ids are refused.
   */
  OUBLIETTE_OAUTH_DEV_CLIENTS?: string;
  /** Cloudflare Access in front of the Worker: the team domain (`<team>.cloudflareaccess.com`). */
  OUBLIETTE_ACCESS_TEAM_DOMAIN?: string;
  /** The Access application's audience (AUD) tag. */
  OUBLIETTE_ACCESS_AUD?: string;
  /** Scopes a person signed in through Access may grant (comma-separated; default admin). */
  OUBLIETTE_ACCESS_SCOPES?: string;
}

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** A comma-separated list of `scheme://host[:port]` origins, each normalized (`URL.origin`). */
const originList = (variable: string) =>
  z
    .string()
    .default("")
    .transform((list, ctx) => {
      const origins: string[] = [];
      for (const entry of list.split(",").map((o) => o.trim())) {
        if (!entry) continue;
        const url = parseUrl(entry);
        const bare = url !== null && url.pathname === "/" && !url.search && !url.hash && !url.username;
        if (!bare || (url.protocol !== "https:" && url.protocol !== "http:")) {
          ctx.addIssue({
            code: "custom",
            message: `${variable}: ${entry} is not an origin like https://host[:port]`,
          });
          return z.NEVER;
        }
        origins.push(url.origin);
      }
      return origins;
    });

const ConfigSchema = z.object({
  /** Default deadline of a caller tool call. */
  callerTimeoutMs: ms(60_000),
  /** Largest per-session deadline a caller may ask for. */
  maxCallerTimeoutMs: ms(15 * 60_000),
  /** How long a caller whose stream dropped may take to reconnect before its pending calls fail. */
  callerGraceMs: ms(3_000),
  /** SSE keep-alive period; also how fast a dead stream is noticed. DESIGN: at most 25 s. */
  keepAliveMs: ms(5_000).refine((v) => v <= 25_000, "OUBLIETTE_KEEPALIVE_MS must be at most 25000"),
  /** Browser origins allowed to call /mcp (requests without Origin are always allowed). */
  allowedOrigins: z
    .string()
    .default("")
    .transform((s) =>
      s
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean),
    ),
  hostAckTimeoutMs: ms(30_000),
  /** How long a spawn waits for a host-agent when none is connected (tunnels reconnect after blips). */
  hostWaitMs: z.coerce.number().int().nonnegative().default(10_000),
  /**
   * Origins the Worker is served at. Only their hosts (and loopback names) are accepted in Host,
   * so a rebound DNS name pointing at the Worker is refused (DNS-rebinding protection).
   */
  publicOrigins: originList("OUBLIETTE_PUBLIC_ORIGINS"),
  /** How long a host may stay disconnected before its sessions end with a host-lost reason. */
  hostGraceMs: ms(60_000),
  /**
   * How long past a call's deadline the host-agent and container-client keep waiting for the
   * session object's outcome before their backstops fire: long enough to outlast the host grace,
   * so a host that comes back in time always hears the session object's decision.
   */
  reconnectBudgetMs: ms(75_000),
  /** The agent runtime of projects that do not name one (`npm start` sets it when a model key is configured). */
  defaultAgent: AgentRuntimeSchema.default(DEFAULT_AGENT_RUNTIME),
  /** How long an async_short call waits for its job before answering its job id (seeds/004: 30 s). */
  jobShortWaitMs: ms(30_000),
  /** The same for async_medium (seeds/004: 120 s). */
  jobMediumWaitMs: ms(120_000),
  /**
   * How long an async_short or async_medium call of a client that takes MCP tasks waits for its
   * job before answering a task instead (a job that ends sooner answers its result).
   */
  taskShortcutMs: ms(2_000),
  /** A message the host has not confirmed written to the droid after this long is reported (an event). */
  messageNoticeMs: ms(30_000),
  /** Whether CIMD client_id URLs may point at loopback and private addresses (local development). */
  oauthDevClients: z
    .enum(["", "0", "1"])
    .default("")
    .transform((v) => v === "1"),
});
export type Config = z.infer<typeof ConfigSchema>;

const cache = new WeakMap<object, Config>();

/** Parsed configuration; a bad value fails loudly with the variable's name. */
export function config(env: Env): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = ConfigSchema.safeParse({
    callerTimeoutMs: env.OUBLIETTE_CALLER_TIMEOUT_MS,
    maxCallerTimeoutMs: env.OUBLIETTE_MAX_CALLER_TIMEOUT_MS,
    callerGraceMs: env.OUBLIETTE_CALLER_GRACE_MS,
    keepAliveMs: env.OUBLIETTE_KEEPALIVE_MS,
    allowedOrigins: env.OUBLIETTE_ALLOWED_ORIGINS,
    hostAckTimeoutMs: env.OUBLIETTE_HOST_ACK_TIMEOUT_MS,
    hostWaitMs: env.OUBLIETTE_HOST_WAIT_MS,
    publicOrigins: env.OUBLIETTE_PUBLIC_ORIGINS,
    hostGraceMs: env.OUBLIETTE_HOST_GRACE_MS,
    reconnectBudgetMs: env.OUBLIETTE_RECONNECT_BUDGET_MS,
    defaultAgent: env.OUBLIETTE_DEFAULT_AGENT || undefined,
    jobShortWaitMs: env.OUBLIETTE_JOB_SHORT_WAIT_MS,
    jobMediumWaitMs: env.OUBLIETTE_JOB_MEDIUM_WAIT_MS,
    taskShortcutMs: env.OUBLIETTE_TASK_SHORTCUT_MS,
    messageNoticeMs: env.OUBLIETTE_MESSAGE_NOTICE_MS,
    oauthDevClients: env.OUBLIETTE_OAUTH_DEV_CLIENTS,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid configuration ${issue?.path.join(".")}: ${issue?.message}`);
  }
  cache.set(env, parsed.data);
  return parsed.data;
}
