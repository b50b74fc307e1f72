import type { ApprovalDecision } from "../../../protocol/approvals.js";
import { type CallerToolOutcome, prefixedToolName } from "../../../protocol/caller-tools.js";
import type { GatedCall } from "./approval-records.js";
import type { Approvals } from "./approvals.js";
import type { CallerCalls } from "./caller-calls.js";
import { failure } from "./outcomes.js";
import type { SessionRecord } from "./session-record.js";

export interface GatedCallsDeps {
  record(): SessionRecord;
  approvals: Pick<Approvals, "gateCall">;
  calls: Pick<CallerCalls, "onCall" | "refuse">;
}

/**
 * A droid's caller tool calls pass their approval gate first (kind `mcp_tool`, by the name the
 * droid sees): allowed, they go on to the caller; refused, they fail with `denied` and the caller
 * never sees them; put to a person, they wait (a re-sent call finds its question) until the
 * decision comes back through `decided`.
 */
export class GatedCalls {
  readonly #d: GatedCallsDeps;

  constructor(deps: GatedCallsDeps) {
    this.#d = deps;
  }

  /** A droid's call: its outcome now, or null while the caller (or a person) decides. */
  call(call: GatedCall): CallerToolOutcome | null {
    const record = this.#d.record();
    const name = prefixedToolName(record.callerId ?? "", call.tool);
    const gate = this.#d.approvals.gateCall(call, name, record.agent?.runtime ?? "scripted");
    if (gate.verdict === "waiting") return null;
    if (gate.verdict === "allow") return this.#d.calls.onCall(call.id, call.tool, call.arguments);
    return this.#refuse(call, gate.message);
  }

  /** A call's gate was decided by a person or its deadline: its outcome now, or null when the caller will decide it. */
  decided(call: GatedCall, decision: ApprovalDecision): CallerToolOutcome | null {
    if (decision.decision === "allow") return this.#d.calls.onCall(call.id, call.tool, call.arguments);
    return this.#refuse(call, decision.message ?? "denied");
  }

  #refuse(call: GatedCall, message: string): CallerToolOutcome {
    const why = `the session's approval policy refused this call: ${message}`;
    return this.#d.calls.refuse(call.id, call.tool, failure("denied", why));
  }
}
