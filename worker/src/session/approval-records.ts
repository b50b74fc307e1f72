import { z } from "zod";
import {
  type ApprovalAnswer,
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type ApprovalKind,
  ApprovalRequestSchema,
} from "../../../protocol/approvals.js";
import { type JsonMap, type JsonObject, JsonObjectSchema } from "../../../protocol/json.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { AppError } from "../errors.js";
import type { PendingRow } from "../pending/pending-store.js";

/**
 * What the approvals of a session store and hand out (approvals.ts decides them): a waiting
 * request's payload, a decision as stored, the shapes callers see, and small readings of them.
 */

/** What a waiting approval keeps besides its id and deadline. */
export const ApprovalPayloadSchema = z.object({
  agent: z.string(),
  request: ApprovalRequestSchema,
  /** The pattern of the rule that asked (null: the whole kind), which `allow_session` allows. */
  match: z.string().nullable(),
  /** Set when the question is a caller tool call's (its gate): the call goes on once decided. */
  call: z.object({ id: z.string(), tool: z.string(), arguments: JsonObjectSchema }).optional(),
  /** Set when a droid's call of Oubliette's tools waits on the question in this object's memory. */
  held: z.boolean().optional(),
});
export type ApprovalPayload = z.infer<typeof ApprovalPayloadSchema>;

/** A decision as stored: the agent's part, and who answered (a token id) when a person did. */
export const ApprovalOutcomeSchema = ApprovalDecisionSchema.extend({ answered_by: z.string().optional() });
export type ApprovalOutcome = z.infer<typeof ApprovalOutcomeSchema>;

export type ApprovalRow = PendingRow<ApprovalOutcome>;

/** An approval request as `session pending` and `session get` list it. */
export interface OpenApproval {
  request_id: string;
  agent: string;
  kind: ApprovalKind;
  summary: string;
  /** The request as the agent made it (typed loosely: RPC stub typing cannot take the recursive JSON type). */
  request: JsonMap;
  deadline: string;
}

/** A caller's answer to an approval request. */
export interface ApprovalResponseInput {
  principal: CallerPrincipal;
  requestId: string;
  answer: ApprovalAnswer;
  message?: string | undefined;
}

/** A caller tool call held by its approval. */
export interface GatedCall {
  id: string;
  tool: string;
  arguments: JsonObject;
}

/** What a caller tool call's gate says: go on, refused (with why), or wait for a person. */
export type CallGate = { verdict: "allow" } | { verdict: "deny"; message: string } | { verdict: "waiting" };

/** Whether the host asked this question (and so waits for its decision on the tunnel). */
export function askedByHost(row: ApprovalRow): boolean {
  const payload = ApprovalPayloadSchema.safeParse(row.payload).data;
  return payload !== undefined && payload.call === undefined && payload.held !== true;
}

export function verdictOf(outcome: ApprovalOutcome): CallGate {
  return outcome.decision === "allow"
    ? { verdict: "allow" }
    : { verdict: "deny", message: outcome.message ?? "denied" };
}

/** The decision without who answered (the agent needs no token ids). */
export function agentPart(outcome: ApprovalOutcome): ApprovalDecision {
  const { answered_by: _by, ...decision } = outcome;
  return decision;
}

/** Why an answer to a decided request is refused, in the caller's terms. */
export function refusedAnswer(row: ApprovalRow): AppError {
  const by = row.outcome?.by;
  if (by === "timeout") {
    return new AppError(
      "request_expired",
      `approval request ${row.id} expired: nobody answered by its deadline`,
    );
  }
  if (by === "ended")
    return new AppError("request_expired", `approval request ${row.id} ended with its session`);
  return new AppError(
    "already_answered",
    `approval request ${row.id} was already decided (${row.outcome?.decision ?? "?"})`,
  );
}
