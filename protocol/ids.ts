import { z } from "zod";

/** A session's id: `ses_` and 24 hex digits (minted by the Worker). Also a path segment on hosts. */
export const SESSION_ID_PATTERN = /^ses_[0-9a-f]{24}$/;

export const SessionIdSchema = z
  .string()
  .regex(SESSION_ID_PATTERN, "session_id looks like ses_ followed by 24 hex digits");
