/** Typed failures of the Docker tooling, classified by `code` (never by message text). */

export type DockerUnavailableCode =
  | "unsupported_docker_host"
  | "unreachable"
  | "not_root"
  | "not_debian"
  | "install_disabled"
  | "apt_failed"
  | "dockerd_exited"
  | "start_timeout";

/** No Docker Engine could be reached or started; the message says why and what to do. */
export class DockerUnavailableError extends Error {
  override readonly name = "DockerUnavailableError";
  readonly code: DockerUnavailableCode;

  constructor(code: DockerUnavailableCode, message: string) {
    super(`Docker Engine unavailable (${code}): ${message}`);
    this.code = code;
  }
}

export type DockerImageErrorCode =
  | "base_image_failed"
  | "build_failed"
  | "bundle_missing"
  /**
   * npm could not install a pinned package (an agent CLI, the base's npm or corepack), or what it
   * installed does not run here.
   */
  | "cli_fetch_failed"
  /** A pinned package is not laid out as CLI_LAYOUTS (or the toolchain's `bin`) says. */
  | "cli_layout";

/** Building or importing one of our images failed; the message carries the engine's own error. */
export class DockerImageError extends Error {
  override readonly name = "DockerImageError";
  readonly code: DockerImageErrorCode;

  constructor(code: DockerImageErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
