/**
 * Runtime failures, typed with a `code` the host-agent maps onto tunnel errors, plus the one
 * place that reads dockerode's HTTP status off an unknown error (dockerode rejects with an
 * Error carrying `statusCode`).
 */

export type RuntimeErrorCode =
  | "image_not_found"
  | "runtime_error"
  | "docker_unavailable"
  /** The image cannot run here (another architecture or OS). */
  | "unsupported";

/** A runtime could not do what was asked; the message says what to do about it. */
export class RuntimeError extends Error {
  override readonly name = "RuntimeError";
  readonly code: RuntimeErrorCode;

  constructor(code: RuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** HTTP status of a failed Docker Engine API call, when the error carries one. */
export function dockerStatusCode(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("statusCode" in error)) return undefined;
  const status = error.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** True when the engine answered 404 (no such container or image). */
export function isDockerNotFound(error: unknown): boolean {
  return dockerStatusCode(error) === 404;
}

/** The message of an unknown thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
