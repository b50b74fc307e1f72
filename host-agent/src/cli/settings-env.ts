/**
 * The settings a subcommand was given (flags or their environment variables), as the environment
 * variables that say them: what `service` writes into the service's environment file, so the
 * service runs with exactly what was checked.
 */
import type { Command } from "commander";

/** `VARIABLE=value` for every option of `command` that has a value and an environment variable. */
export function settingsAsEnv(command: Command, flags: Record<string, unknown>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const option of command.options) {
    const value = flags[option.attributeName()];
    if (option.envVar === undefined || value === undefined || value === false) continue;
    env[option.envVar] =
      value === true ? "1" : Array.isArray(value) ? JSON.stringify(value) : String(value as string | number);
  }
  return env;
}
