import { Limits } from "../../../protocol/limits.js";
import type { JsonRpcErrorObject } from "../../../protocol/rpc/errors.js";
import {
  CANCELLED,
  encodeError,
  encodeNotification,
  encodeRequest,
  encodeResult,
  type Frame,
  type JsonRpcId,
  parseFrame,
} from "../../../protocol/rpc/messages.js";
import { FrameSocket, openWebSocket } from "./frame-socket.js";

/** A message the Worker sent on the tunnel (it never sends one `parseFrame` calls invalid). */
export type RpcFrame = Exclude<Frame, { kind: "invalid" }>;
export type RpcRequest = Extract<RpcFrame, { kind: "request" }>;
export type RpcNotification = Extract<RpcFrame, { kind: "notification" }>;
/** The answer to a request: its result, or its error. */
export type RpcAnswer = Extract<RpcFrame, { kind: "result" | "error" }>;

/** Reads a frame the way the host-agent does: within the frame cap, or the test fails. */
function parseWorkerFrame(text: string): RpcFrame {
  const frame = parseFrame(text, { maxBytes: Limits.frameBytes, maxDepth: Limits.jsonDepth });
  if (frame.kind === "invalid") throw new Error(frame.error.message);
  return frame;
}

const isAnswer = (f: RpcFrame): f is RpcAnswer => f.kind === "result" || f.kind === "error";

/**
 * One end of the tunnel as the host-agent holds it: JSON-RPC 2.0 messages
 * (`protocol/rpc/messages.ts`), each checked by the shared `parseFrame`.
 */
export class RpcSocket extends FrameSocket<RpcFrame> {
  #nextId = 0;

  static async connect(path: string, token: string): Promise<RpcSocket> {
    return new RpcSocket(await openWebSocket(path, token), parseWorkerFrame);
  }

  /** Sends a request (with a fresh id unless given); returns its id. */
  request(method: string, params: unknown, id: JsonRpcId = `t${++this.#nextId}`): JsonRpcId {
    this.send(encodeRequest(id, method, params));
    return id;
  }

  /** Sends a request and waits for its answer. */
  ask(method: string, params: unknown, timeoutMs?: number): Promise<RpcAnswer> {
    return this.answer(this.request(method, params), timeoutMs);
  }

  notify(method: string, params: unknown): void {
    this.send(encodeNotification(method, params));
  }

  /** Answers a request of the Worker with a result. */
  reply(id: JsonRpcId, result: unknown): void {
    this.send(encodeResult(id, result));
  }

  /** Answers a request of the Worker with an error. */
  replyError(id: JsonRpcId, error: JsonRpcErrorObject): void {
    this.send(encodeError(id, error));
  }

  /** Tells the Worker the answer to `requestId` is no longer wanted. */
  cancel(requestId: JsonRpcId, reason?: string): void {
    this.notify(CANCELLED, reason === undefined ? { requestId } : { requestId, reason });
  }

  /** The next unread answer to request `id` (null: an error the Worker could not tie to a request). */
  answer(id: JsonRpcId | null, timeoutMs?: number): Promise<RpcAnswer> {
    return this.take((f): f is RpcAnswer => isAnswer(f) && f.id === id, `answer to ${id}`, timeoutMs);
  }

  /** Every answer to `id` received so far. */
  answers(id: JsonRpcId): RpcAnswer[] {
    return this.seen((f): f is RpcAnswer => isAnswer(f) && f.id === id);
  }

  /** The next unread request of `method` from the Worker (that passes `where`). */
  nextRequest(method: string, where: (f: RpcRequest) => boolean = () => true): Promise<RpcRequest> {
    return this.take(
      (f): f is RpcRequest => f.kind === "request" && f.method === method && where(f),
      `${method} request`,
    );
  }

  /** Every request of `method` the Worker sent so far. */
  requests(method: string): RpcRequest[] {
    return this.seen((f): f is RpcRequest => f.kind === "request" && f.method === method);
  }

  nextNotification(
    method: string,
    where: (f: RpcNotification) => boolean = () => true,
  ): Promise<RpcNotification> {
    return this.take(
      (f): f is RpcNotification => f.kind === "notification" && f.method === method && where(f),
      `${method} notification`,
    );
  }

  /**
   * Waits until every message sent before has been handled: the Worker reads a socket's messages
   * in order and answers a request for a method it does not serve at once.
   */
  async barrier(): Promise<void> {
    await this.answer(this.request("test/barrier", {}));
  }
}

/** The error of an answer, or a test failure when it is a result. */
export function errorOf(answer: RpcAnswer): JsonRpcErrorObject {
  if (answer.kind !== "error")
    throw new Error(`expected an error, got the result ${JSON.stringify(answer.result)}`);
  return answer.error;
}

/** The result of an answer, or a test failure when it is an error. */
export function resultOf(answer: RpcAnswer): unknown {
  if (answer.kind !== "result")
    throw new Error(`expected a result, got the error ${JSON.stringify(answer.error)}`);
  return answer.result;
}
