import picomatch from "picomatch";
import { z } from "zod";
import { JsonObjectSchema } from "./json.js";
import { networkSubject } from "./network.js";

/**
 * Approvals: an agent asks before an action its policy names, and the session's caller (or an
 * operator) answers. This module is the one definition of what is asked, what is answered and
 * how a policy decides; the session object applies it, the runner carries the questions.
 */

/** What an agent asks permission for. */
export const ApprovalKindSchema = z.enum(["shell", "edit", "read", "mcp_tool", "network"]);
export type ApprovalKind = z.infer<typeof ApprovalKindSchema>;

/** What a rule (or a session's own policy) does with a request. */
export const ApprovalActionSchema = z.enum(["allow", "ask", "deny"]);
export type ApprovalAction = z.infer<typeof ApprovalActionSchema>;

/**
 * One rule of a policy: requests of `kind` whose subject matches the glob `match` (every request
 * of the kind when absent) get `action`. The subject is the command line for `shell` (`*`
 * matches anything there, spaces and slashes included), the file's path for `edit` and `read`
 * (`*` within a directory, `**` across them), the tool's name as the agent sees it for
 * `mcp_tool` (caller tools as `{caller_id}_{tool}`, Oubliette's as `oubliette_*`), `host:port`
 * for `network` (a connection the project's network policy does not allow: a rule that asks puts
 * it to a person; one that allows cannot open the network, which only the network policy does).
 */
export const ApprovalRuleSchema = z
  .strictObject({
    kind: ApprovalKindSchema,
    match: z.string().min(1).max(1024).optional(),
    action: ApprovalActionSchema,
  })
  .refine((rule) => !(rule.kind === "network" && rule.action === "allow"), {
    message:
      "a network rule asks or denies: hosts are opened by the project's network policy (network.allow), not by an approval rule",
    path: ["action"],
  });
export type ApprovalRule = z.infer<typeof ApprovalRuleSchema>;

export const MAX_APPROVAL_RULES = 64;

/** A policy of rules: the first rule that matches a request decides it; none: `default`. */
export const ApprovalRulesSchema = z.strictObject({
  rules: z.array(ApprovalRuleSchema).max(MAX_APPROVAL_RULES),
  default: ApprovalActionSchema.default("ask"),
});

/**
 * A project's (or a session's) approval policy: `auto` lets the agent act unasked (its CLI runs
 * fully automatic), `ask` puts everything the agent's own permission system would ask about to a
 * person, or rules.
 */
export const ApprovalPolicySchema = z.union([z.enum(["auto", "ask"]), ApprovalRulesSchema]);
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = "auto";
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 300;
export const MAX_APPROVAL_TIMEOUT_SECONDS = 24 * 3600;
export const ApprovalTimeoutSchema = z.number().int().min(1).max(MAX_APPROVAL_TIMEOUT_SECONDS);

/** What the agent is told when it is denied without a message of the person's. */
export const DEFAULT_DENIAL_MESSAGE =
  "The operator did not approve this action. Do not retry it; choose another way or stop.";

const Text = (max: number) => z.string().max(max);

/**
 * One permission request of an agent, as its runner reports it: what the agent wants to do,
 * exactly (the command, the file and its change, the tool and its arguments), where, and a line
 * for a person. Fields that do not belong to the kind are absent.
 */
export const ApprovalRequestSchema = z
  .object({
    kind: ApprovalKindSchema,
    command: Text(16_384).optional(),
    path: Text(4096).optional(),
    diff: Text(65_536).optional(),
    tool: Text(256).optional(),
    arguments: JsonObjectSchema.optional(),
    /** `network`: the host (name or address), its port, and the method when the gate saw one. */
    host: Text(300).optional(),
    port: z.number().int().min(1).max(65_535).optional(),
    method: Text(32).optional(),
    cwd: Text(4096).optional(),
    summary: Text(512),
  })
  .superRefine((request, ctx) => {
    const needs = {
      shell: "command",
      edit: "path",
      read: "path",
      mcp_tool: "tool",
      network: "host",
    } as const;
    const field = needs[request.kind];
    if (request[field] === undefined)
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `a ${request.kind} request names its ${field}`,
      });
  });
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/** An approval request's id: the runner makes it, and it stays the same across every reconnect. */
export const ApprovalIdSchema = z
  .string()
  .regex(/^apr_[A-Za-z0-9_-]{8,140}$/, "an approval id is apr_ and 8-140 letters, digits, '_' or '-'");

/** The approval a caller tool call waits for: derived from its call id (which is 1-128 such characters). */
export function callApprovalId(callId: string): string {
  return `apr_call_${callId}`;
}

/**
 * Who decided a request: the policy, an earlier `allow_session`, a person's answer, the deadline,
 * the session's end, or an error on the way (the question could not be put: always a deny).
 */
export const ApprovalDeciderSchema = z.enum([
  "policy",
  "session_allowance",
  "answer",
  "timeout",
  "ended",
  "error",
]);

/** The decision the agent gets (its runner turns it into the CLI's own answer). */
export const ApprovalDecisionSchema = z.object({
  decision: z.enum(["allow", "deny"]),
  /**
   * For an allow: this request only, this kind and pattern for the rest of the session, or (a
   * `network` request only) the host added to the project's network allowlist.
   */
  scope: z.enum(["once", "session", "project"]).default("once"),
  /** For a deny: what the agent is told. */
  message: Text(2048).optional(),
  by: ApprovalDeciderSchema,
});
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/**
 * A caller's answer (`approval_response`): allow once, allow for the session, allow for the
 * project (a `network` request only: its host joins the project's network allowlist), or deny
 * with a message.
 */
export const ApprovalAnswerSchema = z.enum(["allow", "allow_session", "allow_project", "deny"]);
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

/** What a request is matched on: its command, its path or its tool. */
export function approvalSubject(request: ApprovalRequest): string {
  switch (request.kind) {
    case "shell":
      return request.command ?? "";
    case "edit":
    case "read":
      return request.path ?? "";
    case "mcp_tool":
      return request.tool ?? "";
    case "network":
      return networkSubject(request.host ?? "", request.port ?? 0);
  }
}

/** Whether `pattern` matches a subject of `kind` (see ApprovalRuleSchema). */
export function approvalMatches(kind: ApprovalKind, pattern: string, subject: string): boolean {
  // A command is not a path: `*` must match across its spaces and slashes (a host has neither).
  return picomatch.isMatch(subject, pattern, { dot: true, bash: kind !== "edit" && kind !== "read" });
}

/** What one policy says of a request, and the rule that said it (null: the mode or the default). */
export interface PolicyVerdict {
  action: ApprovalAction;
  rule: number | null;
  /** The pattern that decided (the rule's `match`); null when the whole kind was decided. */
  match: string | null;
}

export function evaluatePolicy(policy: ApprovalPolicy, request: ApprovalRequest): PolicyVerdict {
  if (policy === "auto") return { action: "allow", rule: null, match: null };
  if (policy === "ask") return { action: "ask", rule: null, match: null };
  const subject = approvalSubject(request);
  for (const [index, rule] of policy.rules.entries()) {
    if (rule.kind !== request.kind) continue;
    if (rule.match !== undefined && !approvalMatches(rule.kind, rule.match, subject)) continue;
    return { action: rule.action, rule: index, match: rule.match ?? null };
  }
  return { action: policy.default, rule: null, match: null };
}

const STRICTNESS: Record<ApprovalAction, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * A session's policy is never looser than its project's: each request gets the stricter of the
 * two verdicts (deny over ask over allow; on a tie, the project's).
 */
export function evaluatePolicies(
  policies: readonly ApprovalPolicy[],
  request: ApprovalRequest,
): PolicyVerdict {
  let verdict: PolicyVerdict = { action: "allow", rule: null, match: null };
  for (const policy of policies) {
    const next = evaluatePolicy(policy, request);
    if (STRICTNESS[next.action] > STRICTNESS[verdict.action]) verdict = next;
  }
  return verdict;
}

/** Whether the agent must be started so that it asks (any policy but `auto` somewhere). */
export function policiesAsk(policies: readonly ApprovalPolicy[]): boolean {
  return policies.some((policy) => policy !== "auto");
}

/** An `allow_session` answer: requests of `kind` matching `match` (all of the kind when null) are allowed unasked. */
export const SessionAllowanceSchema = z.object({ kind: ApprovalKindSchema, match: z.string().nullable() });
export type SessionAllowance = z.infer<typeof SessionAllowanceSchema>;

export function allowanceCovers(allowance: SessionAllowance, request: ApprovalRequest): boolean {
  if (allowance.kind !== request.kind) return false;
  return allowance.match === null || approvalMatches(request.kind, allowance.match, approvalSubject(request));
}
