/** Typed failures of the host-agent's command-line tools, classified by `code` (never by message text). */

export type CliErrorCode =
  /** An option's value names nothing this command knows (a runtime, say). */
  | "invalid_option"
  /** No Docker Engine answers on the socket a command needs. */
  | "docker_unreachable"
  /** systemctl is missing, or refused to reload or start the unit. */
  | "systemd_unavailable"
  /** What was asked for cannot be made into a working service (a path, a name, a value). */
  | "invalid_service_input"
  /** The env file is there already: it holds the host token, so it is replaced only when told to. */
  | "env_file_exists"
  /** The unit's `EnvironmentFile=` names another file than the one being written. */
  | "env_path_mismatch"
  /** An image asked for could not be pulled (no registry reachable, or it has no such image). */
  | "pull_failed";

/** A command could not do what was asked; the message says why and what to do, and never holds a secret. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
