import type { ApprovalRequest } from "../../../protocol/approvals.js";
import type { ApprovalSettings } from "../../../worker/src/session/types.js";

/** A session's approval settings that ask before `git push` and allow the rest. */
export const ASK_BEFORE_PUSH: ApprovalSettings = {
  policies: [{ rules: [{ kind: "shell", match: "git push*", action: "ask" }], default: "allow" }],
  timeoutMs: 60_000,
  denialMessage: "not approved",
};

/** An agent's question the settings above put to a person. */
export const PUSH: ApprovalRequest = {
  kind: "shell",
  command: "git push --force origin main",
  cwd: "/workspace/default",
  summary: "push to main",
};
