/**
 * The scripted test droid's adapter: the runner's own line protocol. Each droid message is the
 * line `{"type":"message","seq","text"}`; an interrupt is `{"type":"interrupt"}`; the agent ends a
 * turn by printing `{"type":"turn_completed","message_seq":n}`. It asks permission by printing
 * `{"type":"approval_request","id","request"}` (a `PermissionAsk`, never an event) and is
 * answered `{"type":"approval_answer","id",…decision}`. Every other stdout line is relayed as it
 * is: `droid_output` with the JSON in `data`, or the raw `text` (a malformed approval_request too).
 */
import {
  type ApprovalAnswerLine,
  ApprovalRequestLineSchema,
  InterruptLineSchema,
  TurnCompletedLineSchema,
} from "../../../protocol/agent-events.js";
import type { ApprovalDecision } from "../../../protocol/approvals.js";
import { type JsonValue, parseJson } from "../../../protocol/json.js";
import { type AgentDriver, asking, type DriverContext, type DriverOutput, output } from "./driver.js";

export function scriptedDriver(context: DriverContext): AgentDriver {
  return {
    launch: () => ({ argv: [...context.command], env: {}, files: [] }),
    start: () => [],
    send: (seq, text) => [JSON.stringify({ type: "message", seq, text })],
    interrupt: () => [JSON.stringify(InterruptLineSchema.parse({ type: "interrupt" }))],
    read: readScriptedLine,
    // The test droid's `exit` step ends its session on purpose; any other end is a crash.
    crashed: (exit) => exit.exitCode !== 0,
  };
}

export function readScriptedLine(line: string): DriverOutput {
  const json = parseJson(line);
  if (!json.ok) return output([{ type: "droid_output", text: line }]);
  const turn = TurnCompletedLineSchema.safeParse(json.value);
  if (turn.success) {
    const { message_seq, stop_reason } = turn.data;
    return output([
      {
        type: "completion",
        stop_reason: stop_reason ?? "end_turn",
        ...(message_seq !== undefined ? { message_seq } : {}),
      },
    ]);
  }
  const ask = ApprovalRequestLineSchema.safeParse(json.value);
  if (ask.success) {
    const { id, request } = ask.data;
    return asking([{ request, answer: (decision) => [answerLine(id, decision)] }]);
  }
  return output([{ type: "droid_output", data: json.value as JsonValue }]);
}

/** The stdin line that answers the scripted droid's question `id`. */
function answerLine(id: string, decision: ApprovalDecision): string {
  const line: ApprovalAnswerLine = {
    type: "approval_answer",
    id,
    decision: decision.decision,
    scope: decision.scope,
    by: decision.by,
    ...(decision.message !== undefined ? { message: decision.message } : {}),
  };
  return JSON.stringify(line);
}
