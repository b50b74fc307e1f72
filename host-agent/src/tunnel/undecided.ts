/**
 * A permission question's answer when nobody decided it: a deny, saying why (the question could
 * not be put, or the session is over on this host).
 */
import type { ApprovalDecision } from "../../../protocol/approvals.js";

/** A decision's message is at most this long (ApprovalDecisionSchema). */
const MAX_DECISION_MESSAGE_CHARS = 2048;

/** A deny nobody decided: the question could not be put (error), or the session is over here (ended). */
export function undecided(by: "error" | "ended", message: string): ApprovalDecision {
  const clipped =
    message.length > MAX_DECISION_MESSAGE_CHARS
      ? `${message.slice(0, MAX_DECISION_MESSAGE_CHARS - 1)}…`
      : message;
  return { decision: "deny", scope: "once", by, message: clipped };
}

/** What a permission question still pending gets when the session ends on this host. */
export const SESSION_ENDED_DECISION: ApprovalDecision = undecided("ended", "the session ended");
