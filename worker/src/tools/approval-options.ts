import {
  DEFAULT_APPROVAL_POLICY,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_DENIAL_MESSAGE,
  MAX_APPROVAL_RULES,
  MAX_APPROVAL_TIMEOUT_SECONDS,
} from "../../../protocol/approvals.js";

/** How `project options` describes approval policies: what each part means, the defaults, examples. */
export const APPROVAL_OPTIONS = {
  field: "approval_policy (project create; session spawn adds its own, and the stricter verdict wins)",
  modes: {
    auto: "Agents act unasked (their CLI's fully automatic mode). The default.",
    ask: "Everything the agent's own permission system asks about is put to a person.",
    rules: "An object {rules, default}: the first rule whose kind and match fit decides; none fits: default.",
  },
  kinds: {
    shell:
      "A shell command; match is a glob on the command line (* matches anything, spaces and slashes too).",
    edit: "A file the agent writes or changes; match is a path glob (* within a directory, ** across).",
    read: "A file read outside the workspace; match is a path glob.",
    mcp_tool:
      "An MCP tool; match is the name the agent sees: {caller_id}_{tool} for caller tools, oubliette_* for Oubliette's.",
  },
  actions: {
    allow: "Runs unasked.",
    ask: "Waits for approval_response (allow, allow_session or deny) until the timeout, then is denied.",
    deny: "Refused at once; the agent is told the denial message.",
  },
  max_rules: MAX_APPROVAL_RULES,
  default_policy: DEFAULT_APPROVAL_POLICY,
  default_timeout_seconds: DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  max_timeout_seconds: MAX_APPROVAL_TIMEOUT_SECONDS,
  default_denial_message: DEFAULT_DENIAL_MESSAGE,
  examples: [
    {
      approval_policy: {
        rules: [
          { kind: "shell", match: "git push*", action: "ask" },
          { kind: "shell", match: "rm -rf *", action: "deny" },
          { kind: "mcp_tool", match: "billing_*", action: "ask" },
        ],
        default: "allow",
      },
    },
    { approval_policy: "ask", approval_timeout_seconds: 600 },
  ],
} as const;
