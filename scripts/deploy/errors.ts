/** Typed failures of `npm run deploy`, classified by `code` (never by message text). */

export type DeployErrorCode =
  /** wrangler.toml (or the `--config` file) could not be read. */
  | "config_unreadable"
  /** It is not TOML, or not shaped as the checks expect. */
  | "config_invalid"
  /** The command line cannot be understood (a `--var` without `KEY:VALUE`, a flag without its value). */
  | "bad_arguments"
  /** wrangler itself could not be started. */
  | "wrangler_unavailable";

/** A failure that stops `npm run deploy` before anything is uploaded; the message says what to do. */
export class DeployError extends Error {
  override readonly name = "DeployError";
  readonly code: DeployErrorCode;

  constructor(code: DeployErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
