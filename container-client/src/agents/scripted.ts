/**
 * The scripted test droid's adapter: the runner's own line protocol. Each droid message is the
 * line `{"type":"message","seq","text"}`; an interrupt is `{"type":"interrupt"}`; the agent ends a
 * turn by printing `{"type":"turn_completed","message_seq":n}`. It asks permission by printing
 * `{"type":"approval_request","id","request"}` (a `PermissionAsk`, never an event) and is
 * answered `{"type":"approval_answer","id",…decision}`; `{"type":"approval_withdrawn","id"}` takes
 * a question back. Every other stdout line is relayed as it
 * is: `droid_output` with the JSON in `data`, or the raw `text` (a malformed approval_request too).
 */
import {
  type ApprovalAnswerLine,
  ApprovalRequestLineSchema,
  ApprovalWithdrawnLineSchema,
  InterruptLineSchema,
  TurnCompletedLineSchema,
} from "../../../protocol/agent-events.js";
import type { ApprovalDecision } from "../../../protocol/approvals.js";
import { type JsonValue, parseJson } from "../../../protocol/json.js";
import {
  type AgentDriver,
  asking,
  type DriverContext,
  type DriverOutput,
  NOTHING,
  output,
  type PermissionAsk,
} from "./driver.js";

export function scriptedDriver(context: DriverContext): AgentDriver {
  /** Questions not answered yet, by the droid's own id (so a withdrawal names the ask). */
  const open = new Map<string, PermissionAsk>();
  const read = (line: string): DriverOutput => {
    const json = parseJson(line);
    const withdrawn = json.ok ? ApprovalWithdrawnLineSchema.safeParse(json.value) : null;
    if (withdrawn?.success) {
      const ask = open.get(withdrawn.data.id);
      open.delete(withdrawn.data.id);
      return ask ? { events: [], write: [], withdrawn: [ask] } : NOTHING;
    }
    const out = readScriptedLine(line);
    for (const ask of out.asks ?? []) open.set(askIds.get(ask) ?? "", ask);
    return out;
  };
  return {
    launch: () => ({ argv: [...context.command], env: {}, files: [] }),
    start: () => [],
    send: (seq, text) => [JSON.stringify({ type: "message", seq, text })],
    interrupt: () => [JSON.stringify(InterruptLineSchema.parse({ type: "interrupt" }))],
    read,
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
  const asked = ApprovalRequestLineSchema.safeParse(json.value);
  if (asked.success) {
    const { id, request } = asked.data;
    const ask: PermissionAsk = { request, answer: (decision) => [answerLine(id, decision)] };
    askIds.set(ask, id);
    return asking([ask]);
  }
  return output([{ type: "droid_output", data: json.value as JsonValue }]);
}

/** The droid's own id of each question. */
const askIds = new WeakMap<PermissionAsk, string>();

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
