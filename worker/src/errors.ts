import { z } from "zod";

/**
 * Typed errors with codes. Handlers throw `AppError`; the HTTP layer maps `status`, the MCP layer
 * turns it into an `isError` tool result (tool failures) or a JSON-RPC error (protocol faults).
 */
/** Every error code, with the HTTP status it maps to (the one list of codes). */
const STATUS = {
  bad_request: 400,
  invalid_arguments: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  no_host: 503,
  host_error: 502,
  session_ended: 409,
  unknown_request: 404,
  already_answered: 409,
  request_expired: 410,
  /** The droid cancelled the call (or went away): nobody waits for an answer any more. */
  request_cancelled: 410,
  too_large: 413,
  /** A project limit (max_recursion_depth, max_agents_per_session) refuses it. */
  limit_exceeded: 429,
  /** Too many readers already wait for the session's events (`session events` with wait_seconds). */
  too_many_waiters: 429,
  host_full: 503,
  /** The project's host is lost or revoked, with its workspaces: spawn with relocate to move it. */
  host_lost: 409,
  /** The project's container does not run (container start). */
  not_running: 409,
  /** The project's host cannot do this (workspace isolation on a host that cannot enforce it). */
  unsupported: 422,
  image_not_found: 422,
  not_owner: 403,
  /** The work was cancelled: `job cancel`, or the MCP request that waited for it was cancelled. */
  cancelled: 410,
  config_error: 500,
  internal: 500,
} as const;
export type ErrorCode = keyof typeof STATUS;

/** An error code, read where one crosses a boundary (a stored record, an RPC answer). */
export const ErrorCodeSchema = z.enum(Object.keys(STATUS) as [ErrorCode, ...ErrorCode[]]);

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "AppError";
    this.code = code;
    this.status = STATUS[code];
  }
}

/** Serializable form of an error, for crossing Durable Object RPC (which keeps only `message`). */
export interface ErrorInfo {
  code: ErrorCode;
  message: string;
}

/** Either a value or a typed error: the shape of every Durable Object RPC result. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: ErrorInfo };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail<T = never>(code: ErrorCode, message: string): Result<T> {
  return { ok: false, error: { code, message } };
}

/** Unwraps an RPC result, re-throwing its error as an AppError on this side. */
export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw new AppError(result.error.code, result.error.message);
}

/** Runs `fn`, turning a thrown AppError into a failed Result (for RPC methods). */
export async function capture<T>(fn: () => Promise<T> | T): Promise<Result<T>> {
  try {
    return ok(await fn());
  } catch (err) {
    if (err instanceof AppError) return fail(err.code, err.message);
    throw err;
  }
}
