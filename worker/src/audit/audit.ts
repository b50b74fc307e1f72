import type { Env } from "../env.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import type { AuditEntry } from "./audit-log-do.js";

/**
 * Appends to the audit log without holding up the caller: the write is kept alive with
 * `waitUntil`, and a failure is logged (with what was lost), never thrown at the caller.
 */
export function audit(
  env: Env,
  entry: Omit<AuditEntry, "at">,
  waitUntil: (promise: Promise<unknown>) => void,
  log: Log,
): void {
  const full: AuditEntry = { ...entry, at: Date.now() };
  waitUntil(
    objects
      .audit(env)
      .record(full)
      .catch((err: unknown) =>
        log.error("could not write the audit log", { ...full, error: errorMessage(err) }),
      ),
  );
}
