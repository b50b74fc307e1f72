/**
 * What every JSON-RPC adapter does alike (Codex's app-server, ACP): one writer numbering its
 * requests, droid messages as turns taken one at a time once the handshake is done, the agent's
 * requests answered at once, and errors to its requests told and ending what they were for (a
 * failed handshake ends every waiting turn; a failed turn request ends that turn). A subclass
 * says how its protocol starts, sends a turn, interrupts, and reads results and notifications.
 */
import type { AgentEventBody, StopReason } from "../../../protocol/agent-events.js";
import type { AgentDriver, AgentLaunch, DriverContext, DriverOutput } from "./driver.js";
import { output } from "./driver.js";
import { answerRequest, parseRpcLine, type RequestAnswer, RpcWriter } from "./json-rpc.js";
import { SerialTurns } from "./serial-turns.js";

export abstract class RpcDriver implements AgentDriver {
  protected readonly context: DriverContext;
  protected readonly rpc: RpcWriter;
  protected readonly turns: SerialTurns;
  /** Requests of the handshake: an error to one means the agent can take no turns. */
  readonly #handshake: ReadonlySet<string>;
  /** The request that starts a turn. */
  readonly #turnMethod: string;

  constructor(
    context: DriverContext,
    protocol: { jsonrpc: boolean; handshake: readonly string[]; turnMethod: string },
  ) {
    this.context = context;
    this.rpc = new RpcWriter({ jsonrpc: protocol.jsonrpc });
    this.turns = new SerialTurns((text) => this.startTurn(text));
    this.#handshake = new Set(protocol.handshake);
    this.#turnMethod = protocol.turnMethod;
  }

  abstract launch(): AgentLaunch;
  abstract start(): string[];
  abstract interrupt(): string[];
  /** The lines that send `text` as a turn (the agent is free and its handshake done). */
  protected abstract startTurn(text: string): string[];
  /** A result to this driver's request `method`. */
  protected abstract onResult(method: string | undefined, result: unknown): DriverOutput;
  protected abstract onNotification(method: string, params: unknown): DriverOutput;
  /** How to answer the agent's request `method`; undefined refuses it. */
  protected abstract answer(method: string, params: unknown): RequestAnswer | undefined;
  /** Events that go before a turn's completion (and any state to drop as the turn ends). */
  protected abstract turnEnding(): AgentEventBody[];

  send(seq: number, text: string): string[] {
    return this.turns.send(seq, text);
  }

  read(line: string): DriverOutput {
    const message = parseRpcLine(line);
    if (message === undefined) return output([{ type: "droid_output", text: line }]);
    switch (message.kind) {
      case "result":
        return this.onResult(this.rpc.settle(message.id), message.result);
      case "error":
        return this.#onError(this.rpc.settle(message.id), errorText(message.error));
      case "request":
        return answerRequest(this.rpc, message, this.answer(message.method, message.params));
      case "notification":
        return this.onNotification(message.method, message.params);
    }
  }

  /** The turn in flight ended: what it leaves, its completion, and the next waiting message's lines. */
  protected endTurn(stopReason: StopReason, events: AgentEventBody[] = []): DriverOutput {
    const ending = this.turnEnding();
    const { completion, write } = this.turns.end(stopReason);
    return output([...ending, ...events, completion], write);
  }

  /** The agent can take no turns: the error, and every open and waiting turn ended. */
  protected cannotStart(message: string): DriverOutput {
    return output([{ type: "error", message }, ...this.turns.fail()]);
  }

  /** An error answer to this driver's request `method` it handles itself (undefined: the default). */
  protected onRequestError(_method: string | undefined, _message: string): DriverOutput | undefined {
    return undefined;
  }

  #onError(method: string | undefined, message: string): DriverOutput {
    const own = this.onRequestError(method, message);
    if (own !== undefined) return own;
    const error: AgentEventBody = { type: "error", message: `${method ?? "a request"} failed: ${message}` };
    if (method !== undefined && this.#handshake.has(method)) return this.cannotStart(error.message);
    if (method === this.#turnMethod) return this.endTurn("error", [error]);
    return output([error]);
  }
}

/** An error answer in words: its message, and its data when that says more (a detail, a reason). */
function errorText(error: { message: string; data?: unknown }): string {
  if (error.data === undefined || error.data === null) return error.message;
  const data = typeof error.data === "string" ? error.data : JSON.stringify(error.data);
  return `${error.message}: ${data.length > 500 ? `${data.slice(0, 499)}…` : data}`;
}
