/**
 * A project's setup: commands run in a workspace as the exec identity before the first agent of
 * that workspace starts (and again on demand), under the project's setup network policy, so the
 * agents find dependencies installed. The one definition of a step, of what the host is asked,
 * and of what it reports as it runs.
 */
import { z } from "zod";

/** One step: a command line (run by /bin/sh -c) or an argv. */
export const SetupStepSchema = z.union([
  z.string().min(1).max(16_384, "a setup command is at most 16384 characters"),
  z.array(z.string().max(16_384, "a setup argument is at most 16384 characters")).min(1).max(256),
]);
export type SetupStep = z.infer<typeof SetupStepSchema>;

export const MAX_SETUP_STEPS = 32;
export const MAX_SETUP_BYTES = 64 * 1024;
/** The longest a setup may take (all its steps). */
export const MAX_SETUP_TIMEOUT_SECONDS = 3600;

export const SetupStepsSchema = z
  .array(SetupStepSchema)
  .max(MAX_SETUP_STEPS, `at most ${MAX_SETUP_STEPS} setup steps`)
  .superRefine((steps, ctx) => {
    const bytes = new TextEncoder().encode(JSON.stringify(steps)).length;
    if (bytes > MAX_SETUP_BYTES)
      ctx.addIssue({
        code: "custom",
        message: `the setup steps are ${bytes} bytes together, at most ${MAX_SETUP_BYTES}`,
      });
  });

/** What a host is asked to run: the steps and how long they may take together. */
export const SetupSpecSchema = z.object({
  steps: SetupStepsSchema,
  timeout_ms: z
    .number()
    .int()
    .min(1_000)
    .max(MAX_SETUP_TIMEOUT_SECONDS * 1000),
});
export type SetupSpec = z.infer<typeof SetupSpecSchema>;

/** How a step reads in an event or a message: the command line, or the argv joined. */
export function stepText(step: SetupStep): string {
  return typeof step === "string" ? step : step.join(" ");
}

/** The argv a step runs. */
export function stepArgv(step: SetupStep): string[] {
  return typeof step === "string" ? ["/bin/sh", "-c", step] : step;
}

/** The longest piece of output one `setup_output` event carries. */
export const MAX_SETUP_OUTPUT_CHUNK = 16 * 1024;

/** What the host reports while a setup runs (a session's events, when a session's start ran it). */
export const SetupEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("setup_started"),
    workspace_id: z.string(),
    steps: z.array(z.string().max(16_384)).max(MAX_SETUP_STEPS),
  }),
  z.object({
    type: z.literal("setup_output"),
    workspace_id: z.string(),
    step: z.number().int().nonnegative(),
    stream: z.enum(["stdout", "stderr"]),
    text: z.string().max(MAX_SETUP_OUTPUT_CHUNK),
  }),
  z.object({
    type: z.literal("setup_finished"),
    workspace_id: z.string(),
    status: z.enum(["ok", "failed"]),
    /** The step that failed, its command, and how it ended (exit code; null: killed or timed out). */
    step: z.number().int().nonnegative().optional(),
    command: z.string().max(16_384).optional(),
    exit_code: z.number().int().nullable().optional(),
    duration_ms: z.number().int().nonnegative(),
    message: z.string().max(2048),
  }),
  /**
   * The session's environment is not all its definition asked for: what a repository's
   * devcontainer.json names that the host does not honour (never granted), said to every session.
   */
  z.object({
    type: z.literal("environment_warning"),
    workspace_id: z.string(),
    message: z.string().max(4096),
  }),
]);
export type SetupEvent = z.infer<typeof SetupEventSchema>;

/** One step's outcome, as `workspace setup` answers it (its output's last part). */
export const SetupStepResultSchema = z.object({
  command: z.string(),
  exit_code: z.number().int().nullable(),
  timed_out: z.boolean(),
  duration_ms: z.number().int().nonnegative(),
  output: z.string(),
});
export const SetupResultSchema = z.object({
  status: z.enum(["ok", "failed", "skipped"]),
  message: z.string(),
  duration_ms: z.number().int().nonnegative(),
  steps: z.array(SetupStepResultSchema),
});
export type SetupResult = z.infer<typeof SetupResultSchema>;
