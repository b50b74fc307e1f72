/**
 * Turns for an agent that takes one at a time, and only once its handshake is done: ACP agents
 * answer one `session/prompt` at a time, and Codex's app-server runs one turn per thread. A droid
 * message that arrives early or mid-turn waits here; each turn's end releases the next.
 */
import type { AgentEventBody, StopReason } from "../../../protocol/agent-events.js";
import { Turns } from "./turns.js";

type Completion = Extract<AgentEventBody, { type: "completion" }>;

export interface TurnEnd {
  completion: Completion;
  /** Lines that start the next waiting message's turn, if any. */
  write: string[];
}

export class SerialTurns {
  readonly #turns = new Turns();
  readonly #waiting: { seq: number; text: string }[] = [];
  readonly #start: (text: string) => string[];
  #open = false;
  #active: number | undefined;

  /** `start` makes the lines that send a message as a turn (called only once the agent is free). */
  constructor(start: (text: string) => string[]) {
    this.#start = start;
  }

  /** The droid message `seq`'s lines if the agent can take it now; otherwise none, until it can. */
  send(seq: number, text: string): string[] {
    this.#waiting.push({ seq, text });
    return this.#next();
  }

  /** The handshake is done: the first waiting message's lines. */
  open(): string[] {
    this.#open = true;
    return this.#next();
  }

  /** The seq of the turn in flight. */
  get active(): number | undefined {
    return this.#active;
  }

  /** The turn in flight ended: its completion, and the next waiting message's lines. */
  end(stopReason: StopReason): TurnEnd {
    const completion = this.#turns.end(stopReason);
    this.#active = undefined;
    return { completion, write: this.#next() };
  }

  /** The agent can take no turns (its handshake failed): every open and waiting turn ends in error. */
  fail(): Completion[] {
    this.#open = false;
    const completions: Completion[] = [];
    if (this.#active !== undefined) completions.push(this.end("error").completion);
    for (const { seq } of this.#waiting.splice(0)) {
      this.#turns.begin(seq);
      completions.push(this.#turns.end("error"));
    }
    return completions;
  }

  #next(): string[] {
    if (!this.#open || this.#active !== undefined) return [];
    const message = this.#waiting.shift();
    if (message === undefined) return [];
    this.#active = message.seq;
    this.#turns.begin(message.seq);
    return this.#start(message.text);
  }
}
