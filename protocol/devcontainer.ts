/**
 * What a host takes from a repository's devcontainer.json (containers.dev, the Dev Container
 * specification) for a project whose environment is "devcontainer": the image, the environment
 * variables, the user it names (mapped to the session uids, never root), the lifecycle commands
 * that become the project's setup steps, and every property it does not honour, said back in one
 * warning. The host reads the file as data and executes nothing of it on the host.
 */
import { z } from "zod";
import { SetupStepSchema } from "./setup.js";

/** The places a repository's devcontainer.json is looked for, in order (relative to the workspace). */
export const DEVCONTAINER_PATHS = [".devcontainer/devcontainer.json", ".devcontainer.json"] as const;

/** The largest devcontainer.json a host reads. */
export const MAX_DEVCONTAINER_BYTES = 256 * 1024;

/** The lifecycle commands taken as setup steps, in the order the specification runs them. */
export const DEVCONTAINER_SETUP_COMMANDS = [
  "onCreateCommand",
  "updateContentCommand",
  "postCreateCommand",
] as const;

/** An environment variable's name as a container takes it. */
const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name");

export const DevcontainerEnvironmentSchema = z.object({
  /** Where it was found, relative to the workspace. */
  path: z.enum(DEVCONTAINER_PATHS),
  image: z.string().min(1).max(512),
  /** containerEnv, then remoteEnv over it. */
  env: z.record(EnvNameSchema, z.string().max(16_384)),
  /** remoteUser (or containerUser): a name only; sessions run as their own non-root uids. */
  user: z.string().max(64).optional(),
  /** onCreateCommand, updateContentCommand, postCreateCommand, each command of an object in turn. */
  setup: z.array(SetupStepSchema),
  /** The properties present that the host does not honour, by name. */
  not_honoured: z.array(z.string().max(128)),
  /** One sentence naming them, when there are any. */
  warning: z.string().max(4096).optional(),
});
export type DevcontainerEnvironment = z.infer<typeof DevcontainerEnvironmentSchema>;
