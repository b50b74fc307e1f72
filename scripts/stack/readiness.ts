/**
 * Readiness of one particular start of the Worker's local server: it answers `/healthz` with the instance
 * nonce this start gave it (OUBLIETTE_INSTANCE_ID). Any other answer on the port — another stack's
 * Worker, an older build, some other server — is not ours, however "ok" it says it is.
 */
import { z } from "zod";

const HealthSchema = z.object({ ok: z.literal(true), instance: z.string().nullish() });

export interface WaitForInstanceOptions {
  timeoutMs: number;
  /** Returns an error to fail with at once (e.g. "the server exited"), checked every poll. */
  failed?: () => Error | undefined;
  signal?: AbortSignal;
  pollMs?: number;
  /** Named in the timeout message, for the reader to look at. */
  logFile?: string;
}

/** The port answered, but not as this instance. */
export class NotOurWorkerError extends Error {
  readonly code = "not_our_worker";
  constructor(url: string, seen: string | null | undefined, options: WaitForInstanceOptions) {
    const why =
      seen === undefined
        ? `the Worker at ${url} was not ready within ${options.timeoutMs} ms`
        : `${url} answers /healthz as another Worker (instance ${seen ?? "unset"}), not the one just started`;
    super(options.logFile ? `${why}; see ${options.logFile}` : why);
    this.name = "NotOurWorkerError";
  }
}

/** Polls `${url}/healthz` until it answers `{ok: true, instance: instanceId}`. */
export async function waitForInstance(
  url: string,
  instanceId: string,
  options: WaitForInstanceOptions,
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  // undefined: no parsable answer yet; null: an answer without an instance.
  let seen: string | null | undefined;
  while (Date.now() < deadline) {
    options.signal?.throwIfAborted();
    const failure = options.failed?.();
    if (failure) throw failure;
    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })
      .then(async (res) => HealthSchema.safeParse(await res.json()))
      .catch(() => undefined);
    if (health?.success) {
      if (health.data.instance === instanceId) return;
      seen = health.data.instance ?? null;
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 100));
  }
  throw new NotOurWorkerError(url, seen, options);
}
