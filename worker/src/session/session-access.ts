import { project, requireAccess } from "../auth/access.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Log } from "../log.js";
import { NotOwnerError } from "./session-errors.js";
import type { SessionRecord } from "./session-record.js";

/**
 * Readers and writers of a session: its project is checked against the principal's scopes on
 * every access (a token scoped to another project, or read-only, is refused even if it owns the
 * session).
 */
export function requireReader(record: SessionRecord, principal: CallerPrincipal): SessionRecord {
  requireAccess(principal, "read", project(record.projectId), `read session ${record.sessionId}`);
  return record;
}

export function requireWriter(
  record: SessionRecord,
  principal: CallerPrincipal,
  what: string,
): SessionRecord {
  requireAccess(principal, "write", project(record.projectId), `${what} session ${record.sessionId}`);
  return record;
}

/** Only the owner (a writer of the project that started the session) may do `what`. */
export function requireOwner(
  record: SessionRecord,
  principal: CallerPrincipal,
  what: string,
  log: Log,
): SessionRecord {
  requireWriter(record, principal, what);
  if (principal.tokenId !== record.ownerTokenId) {
    log.warn("refused a non-owner", { token: principal.tokenId, action: what });
    throw new NotOwnerError(record, what);
  }
  return record;
}
