/**
 * The scripted test droid's adapter: the runner's own line protocol. Each droid message is the
 * line `{"type":"message","seq","text"}`; an interrupt is `{"type":"interrupt"}`; the agent ends a
 * turn by printing `{"type":"turn_completed","message_seq":n}`. Every other stdout line is relayed
 * as it is: `droid_output` with the JSON in `data`, or the raw `text`.
 */
import { InterruptLineSchema, TurnCompletedLineSchema } from "../../../protocol/agent-events.js";
import { type JsonValue, parseJson } from "../../../protocol/json.js";
import { type AgentDriver, type DriverContext, type DriverOutput, output } from "./driver.js";

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
  return output([{ type: "droid_output", data: json.value as JsonValue }]);
}
