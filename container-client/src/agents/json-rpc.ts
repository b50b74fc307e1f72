/**
 * JSON-RPC over stdio lines, as the agent CLIs speak it: the Agent Client Protocol (JSON-RPC 2.0)
 * and Codex's app-server (the same without the `jsonrpc` field). Both sides send requests, so a
 * driver both writes requests (and matches their responses by id) and answers the agent's own.
 */
import { z } from "zod";
import { parseJson } from "../../../protocol/json.js";
import { autoAnswered, type DriverOutput, output } from "./driver.js";

export type RpcId = number | string;

/** Standard JSON-RPC error codes a driver answers with. */
export const RpcCode = {
  methodNotFound: -32601,
} as const;

const RpcIdSchema = z.union([z.number(), z.string()]);

const RpcLineSchema = z.object({
  id: RpcIdSchema.optional(),
  method: z.string().optional(),
  params: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }).optional(),
});

export type RpcIncoming =
  | { kind: "request"; id: RpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "result"; id: RpcId; result: unknown }
  | { kind: "error"; id: RpcId; error: { code: number; message: string; data?: unknown } };

/** What one stdout line is, or undefined when it is no JSON-RPC message (a stray log line). */
export function parseRpcLine(line: string): RpcIncoming | undefined {
  const json = parseJson(line);
  if (!json.ok) return undefined;
  const parsed = RpcLineSchema.safeParse(json.value);
  if (!parsed.success) return undefined;
  const { id, method, params, result, error } = parsed.data;
  if (method !== undefined) {
    return id !== undefined
      ? { kind: "request", id, method, params }
      : { kind: "notification", method, params };
  }
  if (id === undefined) return undefined;
  if (error !== undefined) return { kind: "error", id, error };
  return { kind: "result", id, result };
}

/**
 * Writes one peer's lines: numbers its requests and remembers which method each id was, so a
 * response can be told apart from another (`settle`).
 */
export class RpcWriter {
  readonly #envelope: { jsonrpc?: "2.0" };
  readonly #pending = new Map<RpcId, string>();
  #nextId = 1;

  /** `jsonrpc: false` leaves the `"jsonrpc":"2.0"` field out (Codex's app-server). */
  constructor(options: { jsonrpc: boolean }) {
    this.#envelope = options.jsonrpc ? { jsonrpc: "2.0" } : {};
  }

  request(method: string, params?: unknown): string {
    const id = this.#nextId++;
    this.#pending.set(id, method);
    return JSON.stringify({ ...this.#envelope, id, method, ...withParams(params) });
  }

  notify(method: string, params?: unknown): string {
    return JSON.stringify({ ...this.#envelope, method, ...withParams(params) });
  }

  respond(id: RpcId, result: unknown): string {
    return JSON.stringify({ ...this.#envelope, id, result });
  }

  fail(id: RpcId, code: number, message: string): string {
    return JSON.stringify({ ...this.#envelope, id, error: { code, message } });
  }

  /** The method of this writer's request that `id` answers (forgotten once settled). */
  settle(id: RpcId): string | undefined {
    const method = this.#pending.get(id);
    this.#pending.delete(id);
    return method;
  }
}

/** How a driver answers one of the agent's requests on its own. */
export interface RequestAnswer {
  result: unknown;
  granted: boolean;
  /** What the driver did, for people. */
  message: string;
}

/**
 * The line that answers the agent's request `id` (an error for a method the driver does not know,
 * so the agent never waits for an answer that will not come) and the event that says so.
 */
export function answerRequest(
  rpc: RpcWriter,
  request: { id: RpcId; method: string },
  answer: RequestAnswer | undefined,
): DriverOutput {
  const { id, method } = request;
  if (answer === undefined) {
    return output(
      [
        autoAnswered(`refused the agent's ${method} request: the adapter does not handle it`, {
          method,
          granted: false,
        }),
      ],
      [rpc.fail(id, RpcCode.methodNotFound, `${method} is not supported by this client`)],
    );
  }
  return output(
    [autoAnswered(answer.message, { method, granted: answer.granted })],
    [rpc.respond(id, answer.result)],
  );
}

function withParams(params: unknown): { params?: unknown } {
  return params === undefined ? {} : { params };
}
