import { z } from "zod";
import { AgentRuntimeSchema } from "./agent-runtimes.js";
import { NetworkPolicySchema } from "./network.js";

/** An environment variable name the product accepts from users: UPPER_SNAKE. */
export const EnvNameSchema = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, "environment names are UPPER_SNAKE");
export const EnvSchema = z.record(EnvNameSchema, z.string().max(4096));

/**
 * Resource limits of a project's container; the host fills in its defaults for what is absent.
 * Not strict, like the rest of the wire: a host older than a limit ignores it rather than
 * refusing the project.
 */
export const ProjectLimitsSchema = z.object({
  memory_mb: z.number().int().min(64).max(1_048_576).optional(),
  cpus: z.number().min(0.01).max(1024).optional(),
  pids: z.number().int().min(16).max(1_000_000).optional(),
  /** Disk the project's volume (workspaces, homes) may use, MiB; the host's default when absent. */
  disk_mb: z.number().int().min(64).max(16_777_216).optional(),
});
export type ProjectLimits = z.infer<typeof ProjectLimitsSchema>;

/** Defaults of ProjectLimits on a host. */
export const DEFAULT_PROJECT_LIMITS = { memory_mb: 1024, cpus: 1, pids: 256 } as const;

/**
 * How a project's container is made. `workspace_isolation`: each workspace gets its own uid and
 * a session's agent sees only its own workspace (hosts that cannot enforce it refuse the project).
 */
export const ProjectSpecSchema = z.object({
  image: z.string().min(1).max(256).optional(),
  /** The runtime the container is made for: without an image, the host uses that runtime's image. */
  agent: AgentRuntimeSchema.optional(),
  env: EnvSchema.optional(),
  limits: ProjectLimitsSchema.default({}),
  workspace_isolation: z.boolean().default(false),
  /** What the project's agents and commands may reach through the host's gate (absent: off). */
  network: NetworkPolicySchema.optional(),
  /** What its setup commands may reach (absent: the package registries). */
  setup_network: NetworkPolicySchema.optional(),
  /**
   * `devcontainer`: the default workspace's devcontainer.json names the image, environment and
   * setup steps (protocol/devcontainer.ts); read by the host when the container starts.
   */
  environment: z.literal("devcontainer").optional(),
});
export type ProjectSpec = z.infer<typeof ProjectSpecSchema>;
