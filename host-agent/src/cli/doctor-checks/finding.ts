/**
 * What one doctor check found, and the one way every check runs: bounded in time, so a daemon
 * that never answers (an engine, a Worker, a hung network filesystem) makes doctor report
 * rather than hang, and an unexpected failure becomes a finding rather than a crash.
 */

export interface DoctorFinding {
  /** Which check (stable: `docker`, `worker`, `host-token`, …). */
  check: string;
  ok: boolean;
  /** Works, but should be seen to (printed with `!` and its fix; doctor still succeeds). */
  warning?: boolean;
  /** What was found, for a person; never a secret. */
  detail: string;
  /** What to do about a failure or a warning. */
  fix?: string;
}

/** The message of an unknown thrown value. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs one check with `timeoutMs` to answer. The check gets a signal that aborts at the deadline
 * (for fetch and the like); a check still running then is reported as not answering.
 */
export async function timed(
  check: string,
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<DoctorFinding>,
  onTimeout: { detail: string; fix?: string },
): Promise<DoctorFinding> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<DoctorFinding>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ check, ok: false, ...onTimeout });
    }, timeoutMs);
  });
  const running = run(controller.signal).catch(
    (error: unknown): DoctorFinding => ({
      check,
      ok: false,
      detail: `the check failed: ${errorText(error)}`,
    }),
  );
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A duration for a person: "5 s", "250 ms". */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
