/**
 * The one size budget of the product, end to end. Every limit counts encoded bytes (UTF-8 of the
 * JSON encoding, escapes included) and is checked where input enters (MCP tools, the container
 * socket, the plain WebSocket), so anything accepted fits every later hop: a payload at its limit
 * plus the largest envelope any hop wraps it in stays under the frame and line caps
 * (`test/unit/limits.test.ts` holds that invariant).
 */
import { jsonBytes, MAX_JSON_DEPTH } from "./json.js";

export const Limits = {
  /** Largest tunnel frame (one WebSocket text message) either side sends or accepts. */
  frameBytes: 1024 * 1024,
  /** Largest container socket line. */
  lineBytes: 1024 * 1024,
  /** A caller's tool declaration: `caller_id` and `caller_tools`, JSON-encoded. */
  declarationBytes: 256 * 1024,
  /** One message to the droid (`prompt` or `message`), JSON-encoded. */
  messageBytes: 256 * 1024,
  /** The arguments of one caller tool call made by the droid, JSON-encoded. */
  argumentsBytes: 256 * 1024,
  /** A caller's answer to one call (`result` or `error`), JSON-encoded. */
  resultBytes: 512 * 1024,
  /** One event of droid output (a stdout or stderr line), JSON-encoded. */
  outputEventBytes: 256 * 1024,
  /**
   * One line an agent CLI writes on stdout, read by its adapter (which fits what it makes of it to
   * the budgets above): a permission question or a tool call carrying a large file is one line, and
   * the CLI waits for its answer. Longer ones are dropped, with a log event.
   */
  agentLineBytes: 8 * 1024 * 1024,
  /** Deepest nesting of arrays and objects. */
  jsonDepth: MAX_JSON_DEPTH,
} as const;

/** The largest envelope (ids, method, event fields) any hop puts around a budgeted payload. */
export const MAX_ENVELOPE_BYTES = 16 * 1024;

/** What a size limit applies to, with the name people see in errors. */
export const SizedKinds = {
  declaration: {
    limit: Limits.declarationBytes,
    what: "the caller tool declaration (caller_id + caller_tools)",
  },
  message: { limit: Limits.messageBytes, what: "a message to the droid" },
  arguments: { limit: Limits.argumentsBytes, what: "the arguments of a caller tool call" },
  result: { limit: Limits.resultBytes, what: "a caller's answer (result or error)" },
  output_event: { limit: Limits.outputEventBytes, what: "one droid output event" },
} as const;
export type SizedKind = keyof typeof SizedKinds;

/** Something was larger than its budget; `message` names the limit. */
export class TooLargeError extends Error {
  override readonly name = "TooLargeError";
  readonly code = "too_large" as const;

  constructor(
    readonly kind: SizedKind,
    readonly bytes: number,
  ) {
    const { limit, what } = SizedKinds[kind];
    super(`${what} is ${bytes} bytes encoded; the limit is ${limit} bytes`);
  }

  get limit(): number {
    return SizedKinds[this.kind].limit;
  }
}

/** Returns a TooLargeError when `value`, JSON-encoded, is over the `kind`'s budget. */
export function checkSize(kind: SizedKind, value: unknown): TooLargeError | null {
  const bytes = jsonBytes(value);
  return bytes > SizedKinds[kind].limit ? new TooLargeError(kind, bytes) : null;
}
