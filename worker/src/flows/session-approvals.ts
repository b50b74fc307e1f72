import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { type ApprovalPolicy, DEFAULT_DENIAL_MESSAGE, policiesAsk } from "../../../protocol/approvals.js";
import { AppError } from "../errors.js";
import type { ProjectConfig } from "../projects/project-config.js";
import type { ApprovalSettings } from "../session/types.js";

/** What a spawn says about approvals. */
export interface ApprovalArgs {
  approval_policy?: ApprovalPolicy | undefined;
  approval_timeout_seconds?: number | undefined;
}

/**
 * The approval settings of a new session: its project's policy, its parent session's (a droid's
 * child never escapes what its parent was started under) and its own, all applied with the
 * strictest verdict winning, so a session can only ask more than its project, never less.
 * `auto` entries are dropped: they allow everything and so never decide anything.
 */
export function sessionApprovals(
  config: ProjectConfig,
  parentPolicies: readonly ApprovalPolicy[],
  args: ApprovalArgs,
): ApprovalSettings {
  const all = [
    config.approval_policy,
    ...parentPolicies,
    ...(args.approval_policy ? [args.approval_policy] : []),
  ];
  const policies: ApprovalPolicy[] = [];
  for (const policy of all) {
    if (policy === "auto") continue;
    const text = JSON.stringify(policy);
    if (!policies.some((known) => JSON.stringify(known) === text)) policies.push(policy);
  }
  return {
    policies,
    timeoutMs: (args.approval_timeout_seconds ?? config.approval_timeout_seconds) * 1000,
    denialMessage: config.approval_denial_message ?? DEFAULT_DENIAL_MESSAGE,
  };
}

/** Whether the session's agent runs so that it asks. */
export function approvalsMode(settings: ApprovalSettings): "auto" | "ask" {
  return policiesAsk(settings.policies) ? "ask" : "auto";
}

/**
 * Whether each runtime's own permission hook is wired to approvals (docs/approval-hooks.md).
 * Every runtime must say (a new one does not compile until it does); a session whose policy asks
 * cannot run one that says no: it would act unasked, so it is refused instead.
 */
const ASKS: Record<AgentRuntime, boolean> = {
  scripted: true,
  claude: true,
  codex: true,
  gemini: true,
  opencode: true,
  droid: true,
};

/** Refuses a session whose policy asks on a runtime that cannot ask. */
export function requireAskingRuntime(settings: ApprovalSettings, runtime: AgentRuntime): void {
  if (approvalsMode(settings) === "auto" || ASKS[runtime]) return;
  const able = Object.entries(ASKS).flatMap(([name, asks]) => (asks ? [name] : []));
  throw new AppError(
    "unsupported",
    `the ${runtime} agent cannot ask for approval, and this session's approval policy asks: ` +
      `use approval_policy "auto" or one of ${able.join(", ")}`,
  );
}
