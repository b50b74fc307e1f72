import { z } from "zod";
import {
  AGENT_TITLES,
  type AgentRuntime,
  AgentRuntimeSchema,
  DEFAULT_AGENT_RUNTIME,
} from "../../../protocol/agent-runtimes.js";
import {
  ApprovalPolicySchema,
  ApprovalTimeoutSchema,
  DEFAULT_APPROVAL_POLICY,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
} from "../../../protocol/approvals.js";
import {
  DEFAULT_WORKSPACE_ID,
  ProjectIdSchema as ProjectIdFormat,
  WorkspaceIdSchema as WorkspaceIdFormat,
} from "../../../protocol/ids.js";
import {
  DEFAULT_NETWORK_POLICY,
  DEFAULT_SETUP_NETWORK_POLICY,
  NETWORK_PRESET_NAMES,
  NetworkPolicySchema,
} from "../../../protocol/network.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import { MAX_SETUP_TIMEOUT_SECONDS, type SetupSpec, SetupStepsSchema } from "../../../protocol/setup.js";
import type { SessionSpec } from "../../../protocol/tunnel.js";
import { ForgeSettingsSchema, type SessionGit, type WorkspaceBranch } from "../../../protocol/tunnel-git.js";
import { GitCredentialNameSchema, RemoteUrlSchema } from "../../../protocol/tunnel-projects.js";
import { decodeRecord, type RecordFormat, type SameShape } from "../objects/stored-record.js";

/**
 * A project's configuration, validated once here: what its container runs, its default agent,
 * its limits and how its workspaces behave. Ids are minted by the Worker (`prj_` + 24 hex).
 */
export const ProjectIdSchema = ProjectIdFormat.describe("Project id (from project create or list).");
export const WorkspaceIdSchema = WorkspaceIdFormat.describe(
  "Workspace id: a directory under /workspace in the project container.",
);
export const DEFAULT_WORKSPACE = DEFAULT_WORKSPACE_ID;

/** Container types a project may name instead of an image; `default` is the host's droid image. */
export const CONTAINER_TYPES = {
  default: "The host's droid image (Node.js, git, the container-client and runner).",
} as const;
export const ContainerTypeSchema = z.enum(Object.keys(CONTAINER_TYPES) as [keyof typeof CONTAINER_TYPES]);

/** Agents a project may name as its default (the runtime catalogue); `scripted` is the test droid. */
export const AGENTS = AGENT_TITLES;
export const AgentNameSchema = AgentRuntimeSchema;

const IMAGE_REF =
  /^([A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?\/)?[a-z0-9][a-z0-9._/-]{0,200}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$/;
/** Names that would carry secrets: project env is for non-secret settings only. */
const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE|CREDENTIAL)/;

const EnvSchema = z
  .record(
    z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/, "env names are UPPER_SNAKE_CASE"),
    z.string().max(4096),
  )
  .superRefine((env, ctx) => {
    const names = Object.keys(env);
    if (names.length > 64) ctx.addIssue({ code: "custom", message: "at most 64 env entries" });
    for (const name of names) {
      if (name.startsWith("OUBLIETTE_")) {
        ctx.addIssue({ code: "custom", path: [name], message: "OUBLIETTE_* names are reserved" });
      } else if (SECRET_NAME.test(name)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "env holds non-secret settings only; secrets never go into project config",
        });
      }
    }
  });

const RelativePathSchema = z
  .string()
  .min(1)
  .max(512)
  .refine(
    (p) => !p.startsWith("/") && !p.split("/").includes(".."),
    "protected paths are relative to the workspace and stay inside it",
  );

/** How `approval_policy` is described to callers (project create, session spawn, project options). */
export const APPROVAL_POLICY_HELP =
  "What agents ask before acting: auto (nothing: they act unasked, the default), ask (everything their own " +
  'permission system asks about), or rules: {"rules":[{"kind":"shell"|"edit"|"read"|"mcp_tool",' +
  '"match":"<glob>","action":"allow"|"ask"|"deny"}],"default":"ask"}, first match wins. match is a glob on ' +
  "the command line (shell), the file path (edit, read) or the tool name as the agent sees it (mcp_tool: " +
  "{caller_id}_{tool}, oubliette_*); without match a rule covers its whole kind.";

/** How `network` is described to callers (project create/update, session spawn, project options). */
export const NETWORK_HELP =
  'What agents and commands may reach through the host\'s gate: {"mode":"off"} (nothing, the default), ' +
  '{"mode":"allowlist","allow":["registry.npmjs.org","*.example.com:443"],"presets":["package-registries"],' +
  '"methods":["GET","HEAD","CONNECT"]} (those hosts; *. opens subdomains only; a port limits the entry; methods ' +
  'limits plain-HTTP requests, CONNECT standing for HTTPS tunnels), or {"mode":"open"} (any public address). ' +
  "Loopback, private, link-local and the host's own addresses are refused whatever the policy says. Presets: " +
  `${NETWORK_PRESET_NAMES.join(", ")}.`;

export const SetupSchema = SetupStepsSchema.describe(
  'Commands run in the container as the exec user in each new workspace (and again with workspace setup), before its first agent starts, under setup_network: e.g. ["npm ci"]. A string runs under /bin/sh -c; an array is an argv.',
);

export const SetupTimeoutSchema = z
  .number()
  .int()
  .min(10)
  .max(MAX_SETUP_TIMEOUT_SECONDS)
  .describe("How long the setup steps may take together, in seconds.");

/** Strict: a misspelt limit is refused rather than silently dropped (the default would apply). */
export const LimitsSchema = z.strictObject({
  max_recursion_depth: z
    .number()
    .int()
    .min(0)
    .max(16)
    .default(3)
    .describe("How deep droids may spawn droids."),
  max_agents_per_session: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe("Most agents one session may run."),
  max_cost_usd: z
    .number()
    .min(0)
    .max(100_000)
    .nullable()
    .default(null)
    .describe("Model spend cap per session (null: none)."),
  memory_mb: z.number().int().min(128).max(262_144).default(1024).describe("Container memory limit."),
  cpus: z.number().min(0.1).max(128).default(1).describe("Container CPU limit."),
  pids: z.number().int().min(32).max(65_536).default(256).describe("Container process limit."),
  disk_mb: z
    .number()
    .int()
    .min(64)
    .max(16_777_216)
    .nullable()
    .default(null)
    .describe("Disk the project's container and workspaces may use, in MiB (null: the host's default)."),
  idle_timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .default(30 * 60)
    .describe("A session with no turn and no caller tool call in flight stops after this long idle."),
  max_lifetime_seconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .default(24 * 3600)
    .describe("Hard cap on a session's life."),
});
export type Limits = z.infer<typeof LimitsSchema>;
export const DEFAULT_LIMITS: Limits = LimitsSchema.parse({});

/** What `project create` accepts (container_type and image exclude each other: `checkProjectConfig`). */
export const ProjectConfigSchema = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "name is 1-64 letters, digits, '.', '_' or '-'")
    .describe("Unique project name."),
  description: z.string().max(2000).default("").describe("What the project is for."),
  container_type: ContainerTypeSchema.optional().describe("Container type (see project options)."),
  image: z
    .string()
    .regex(IMAGE_REF, "image must be a Docker image reference")
    .optional()
    .describe("Container image, instead of container_type."),
  environment: z
    .literal("devcontainer")
    .optional()
    .describe(
      "devcontainer: the repository's .devcontainer/devcontainer.json (or .devcontainer.json) gives the image, containerEnv and the setup steps (onCreateCommand, updateContentCommand, postCreateCommand); needs remote_url, excludes image and container_type. What the host cannot honour is named in a warning.",
    ),
  default_agent: AgentNameSchema.optional().describe(
    "Agent sessions run unless spawn names another (default: the server's OUBLIETTE_DEFAULT_AGENT, else scripted).",
  ),
  default_model: z
    .string()
    .max(128)
    .nullable()
    .default(null)
    .describe("Model the agent uses (null: the agent's default)."),
  env: EnvSchema.default({}).describe("Non-secret environment for the container and its agents."),
  limits: LimitsSchema.default(DEFAULT_LIMITS).describe("Recursion, agent, cost and container limits."),
  workspace_isolation: z.boolean().default(false).describe("A session sees only its own workspace."),
  protected_paths: z
    .array(RelativePathSchema)
    .max(64)
    .default([])
    .describe("Workspace paths agents must not change."),
  init_git: z
    .boolean()
    .default(true)
    .describe("git init the default workspace (unless remote_url clones it)."),
  remote_url: RemoteUrlSchema.nullable()
    .default(null)
    .describe(
      "Clone the default workspace from this URL (the host clones it; https:// or ssh:// to a public address unless the host allows local remotes).",
    ),
  git_credential: GitCredentialNameSchema.nullable()
    .default(null)
    .describe(
      "The host's git credential (by name, from its --git-credentials file) for the remote; the secret never leaves the host.",
    ),
  forge: ForgeSettingsSchema.nullable()
    .default(null)
    .describe(
      "Where pull requests are opened: {kind: github|gitlab, api_url} (null: derived from remote_url; github.com and gitlab.com are known).",
    ),
  approval_policy: ApprovalPolicySchema.default(DEFAULT_APPROVAL_POLICY).describe(APPROVAL_POLICY_HELP),
  approval_timeout_seconds: ApprovalTimeoutSchema.default(DEFAULT_APPROVAL_TIMEOUT_SECONDS).describe(
    "How long an approval request waits for an answer; no answer by then is a deny.",
  ),
  approval_denial_message: z
    .string()
    .min(1)
    .max(2048)
    .nullable()
    .default(null)
    .describe("What a denied agent is told when the denial carries no message (null: a default)."),
  network: NetworkPolicySchema.default(DEFAULT_NETWORK_POLICY).describe(NETWORK_HELP),
  setup: SetupSchema.default([]),
  setup_network: NetworkPolicySchema.default(DEFAULT_SETUP_NETWORK_POLICY).describe(
    "What the setup steps may reach (default: the package-registries preset). Same form as network.",
  ),
  setup_timeout_seconds: SetupTimeoutSchema.default(600),
});
export type ProjectConfig = z.infer<typeof ProjectConfigSchema>;

/**
 * What `project update` may change (each optional; what is absent stays): settings a running
 * project takes without a new container. Strict: a field it cannot change is refused by name.
 */
export const ProjectUpdateSchema = z.strictObject({
  description: ProjectConfigSchema.shape.description.unwrap().optional(),
  default_model: z.string().max(128).nullable().optional(),
  protected_paths: z.array(RelativePathSchema).max(64).optional(),
  approval_policy: ApprovalPolicySchema.optional().describe(APPROVAL_POLICY_HELP),
  approval_timeout_seconds: ApprovalTimeoutSchema.optional(),
  approval_denial_message: z.string().min(1).max(2048).nullable().optional(),
  network: NetworkPolicySchema.optional().describe(NETWORK_HELP),
  setup: SetupSchema.optional(),
  setup_network: NetworkPolicySchema.optional(),
  setup_timeout_seconds: SetupTimeoutSchema.optional(),
});
export type ProjectUpdate = z.infer<typeof ProjectUpdateSchema>;

/**
 * A config as a project object stored it. One stored before a limit existed lacks that limit:
 * its default fills in, so readers (and `config_limits`) see every limit.
 */
export function storedConfig(json: string): ProjectConfig {
  return decodeRecord(PROJECT_CONFIG, json);
}

/**
 * A config as stored, which may predate renames: a limit that no longer exists (the minutes and
 * hours limits, now seconds) is dropped, as reading it always ignored it, and the agent once named
 * `claude-code` is `claude`. What `project create` accepts stays strict.
 */
const StoredProjectConfigSchema = ProjectConfigSchema.extend({
  default_agent: z.preprocess(
    (name) => (name === "claude-code" ? "claude" : name),
    AgentNameSchema.optional(),
  ),
  limits: z.object(LimitsSchema.shape).default(DEFAULT_LIMITS),
});

/** Project configs are stored as bare JSON (version 0), parsed by the schema on every read. */
const PROJECT_CONFIG = {
  kind: "project config",
  version: 0,
  schema: StoredProjectConfigSchema,
} satisfies RecordFormat<typeof StoredProjectConfigSchema>;

const sameShape: SameShape<z.output<typeof StoredProjectConfigSchema>, ProjectConfig> = true;
void sameShape;

/** The checks across fields; null when the config is consistent. */
export function configProblem(config: ProjectConfig): string | null {
  if (config.container_type && config.image) return "give container_type or image, not both";
  if (config.environment === "devcontainer") {
    if (config.image || config.container_type)
      return "environment devcontainer takes the image from the repository's devcontainer.json: give no image or container_type";
    if (config.remote_url === null)
      return "environment devcontainer reads the repository's devcontainer.json: give remote_url";
  }
  return null;
}

/** How the project's host makes its container (the tunnel's ProjectSpec). */
export function projectSpec(config: ProjectConfig): ProjectSpec {
  return {
    ...(config.image ? { image: config.image } : {}),
    agent: config.default_agent ?? DEFAULT_AGENT_RUNTIME,
    env: config.env,
    limits: containerLimits(config.limits),
    workspace_isolation: config.workspace_isolation,
    network: config.network,
    setup_network: config.setup_network,
    ...(config.environment ? { environment: config.environment } : {}),
  };
}

/** The limits the host enforces on the container; a limit left to the host's default is absent. */
function containerLimits(limits: Limits): ProjectSpec["limits"] {
  const { memory_mb, cpus, pids, disk_mb } = limits;
  return { memory_mb, cpus, pids, ...(disk_mb !== null ? { disk_mb } : {}) };
}

/** Which agent a session runs: the spawn's choice, else the project's defaults; the budget is the project's. */
export function sessionAgent(
  config: ProjectConfig,
  chosen: { agent?: AgentRuntime | undefined; model?: string | undefined },
): NonNullable<SessionSpec["agent"]> {
  const model = chosen.model ?? config.default_model;
  const budget = config.limits.max_cost_usd;
  return {
    runtime: chosen.agent ?? config.default_agent ?? DEFAULT_AGENT_RUNTIME,
    ...(model !== null ? { model } : {}),
    // A zero budget allows nothing: the proxy refuses at a cost of 0 >= 0.
    ...(budget !== null ? { max_cost_usd: budget } : {}),
  };
}

/** The setup a host runs in a workspace before its first agent (null: the project has none). */
export function setupSpec(config: ProjectConfig): SetupSpec | null {
  // The repository's lifecycle commands join the project's on the host (even when it has none).
  if (config.setup.length === 0 && config.environment !== "devcontainer") return null;
  return { steps: config.setup, timeout_ms: config.setup_timeout_seconds * 1000 };
}

/** How a workspace begins on the host, and the remote its sessions push to. */
export interface WorkspaceSetup {
  initGit: boolean;
  remoteUrl: string | null;
  /** The host's credential for the remote (by name). */
  gitCredential: string | null;
  /** A branch to start in it (a session's own workspace). */
  branch: WorkspaceBranch | null;
  /** The project's remote, which its sessions' agents push to through the host. */
  sessionGit: SessionGit | null;
}

/**
 * How a workspace begins on the host: the default one as the project asks; one made for a
 * session's own branch the same way, on that branch; the others empty.
 */
export function workspaceSetup(
  config: ProjectConfig,
  workspaceId: string,
  branch: WorkspaceBranch | null = null,
): WorkspaceSetup {
  const sessionGit =
    config.remote_url === null
      ? null
      : {
          remote_url: config.remote_url,
          ...(config.git_credential !== null ? { git_credential: config.git_credential } : {}),
        };
  if (workspaceId !== DEFAULT_WORKSPACE && branch === null)
    return { initGit: false, remoteUrl: null, gitCredential: null, branch: null, sessionGit };
  return {
    initGit: config.remote_url === null && config.init_git,
    remoteUrl: config.remote_url,
    gitCredential: config.remote_url === null ? null : config.git_credential,
    branch,
    sessionGit,
  };
}

/** The git part of a `workspace_create` request for `setup`. */
export function workspaceGitParams(setup: WorkspaceSetup): {
  init_git: boolean;
  remote_url?: string;
  git_credential?: string;
  branch?: WorkspaceBranch;
} {
  return {
    init_git: setup.initGit,
    ...(setup.remoteUrl !== null ? { remote_url: setup.remoteUrl } : {}),
    ...(setup.gitCredential !== null ? { git_credential: setup.gitCredential } : {}),
    ...(setup.branch !== null ? { branch: setup.branch } : {}),
  };
}
