/**
 * Which droid message each turn answers. Agents queue user messages that arrive mid-turn and
 * answer them in order, so turns end in the order their messages were sent: a FIFO of seqs.
 */
import type { AgentEventBody, StopReason } from "../../../protocol/agent-events.js";

type Completion = Extract<AgentEventBody, { type: "completion" }>;

export class Turns {
  readonly #open: number[] = [];

  /** A turn for droid message `seq` was sent to the agent. */
  begin(seq: number): void {
    this.#open.push(seq);
  }

  get inFlight(): boolean {
    return this.#open.length > 0;
  }

  /** The oldest open turn ended: its completion event (without a seq if none was open). */
  end(stopReason: StopReason, text?: string): Completion {
    const seq = this.#open.shift();
    return {
      type: "completion",
      stop_reason: stopReason,
      ...(seq !== undefined ? { message_seq: seq } : {}),
      ...(text !== undefined && text !== "" ? { text } : {}),
    };
  }
}
