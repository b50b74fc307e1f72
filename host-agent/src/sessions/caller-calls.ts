/**
 * The host-agent's half of caller tool calls: it relays each one (by its call id) over the
 * session tunnel and answers the droid with the session object's outcome. The session object is
 * the one authority on a call's outcome; this side only
 * - cancels at the object when the droid cancels, or when the droid's connection is gone and
 *   does not come back for the call within a grace (a restarted container-client re-sends it);
 * - keeps a finished outcome a while, so a call re-sent after a reconnect is answered at once;
 * - gives up by itself only at the backstop (deadline plus reconnect budget), with its own reason.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import type { HandlerContext } from "../../../lib/rpc/peer.js";
import { type CallerToolOutcome, CallIdSchema, failureToRpcError } from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { CallerToolRequest } from "../socket/types.js";

export interface CallerCallsOptions {
  relay(callId: string, tool: string, args: JsonObject): Promise<CallerToolOutcome>;
  cancel(callId: string, reason: string): void;
  /** The current backstop of one call, counted from when it reached this host. */
  backstopMs(): number;
  logger: Logger;
  /** How long a call whose connection closed waits to be re-sent before it is cancelled; default 5 s. */
  reclaimGraceMs?: number;
  /** How long a finished outcome is kept for re-sent calls; default 2 min. */
  keepOutcomeMs?: number;
}

interface Entry {
  readonly done: Promise<CallerToolOutcome>;
  waiters: number;
  /** A waiter received the outcome (the droid has its answer). */
  answered: boolean;
  reclaimTimer?: NodeJS.Timeout;
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

export class CallerCalls {
  readonly #o: CallerCallsOptions;
  readonly #calls = new Map<string, Entry>();

  constructor(options: CallerCallsOptions) {
    this.#o = options;
  }

  /** Calls still open on this host (waiting, or finished and kept for a re-send). */
  get size(): number {
    return this.#calls.size;
  }

  /** Runs one `caller_tool` request; resolves with the caller's result or throws an RpcError. */
  async run(request: CallerToolRequest, ctx: HandlerContext): Promise<JsonValue> {
    const tooLarge = checkSize("arguments", request.arguments);
    if (tooLarge) throw failureToRpcError("too_large", tooLarge.message);
    const callId =
      request.call_id ?? (CallIdSchema.safeParse(ctx.id).success ? String(ctx.id) : randomUUID());
    const entry = this.#calls.get(callId) ?? this.#open(callId, request);
    entry.waiters += 1;
    clearTimeout(entry.reclaimTimer);
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(ctx.signal.reason);
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([entry.done, aborted]);
      entry.answered = true;
      if (outcome.ok) return outcome.result;
      throw failureToRpcError(outcome.error.reason, outcome.error.message);
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.RequestCancelled) {
        this.#o.cancel(callId, "the droid cancelled the call");
      } else if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) {
        this.#awaitReclaim(callId, entry);
      }
      throw err;
    } finally {
      entry.waiters -= 1;
      if (onAbort) ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  /** Forgets everything (the session is over on this host). */
  clear(): void {
    for (const entry of this.#calls.values()) clearTimeout(entry.reclaimTimer);
    this.#calls.clear();
  }

  #open(callId: string, request: CallerToolRequest): Entry {
    const backstopMs = this.#o.backstopMs();
    let backstop: NodeJS.Timeout | undefined;
    const done = new Promise<CallerToolOutcome>((resolve) => {
      this.#o.relay(callId, request.tool, request.arguments).then(resolve);
      backstop = setTimeout(() => {
        const message = `no outcome from the Worker within ${formatSeconds(backstopMs)} (the caller's deadline plus the reconnect budget); the tunnel may be down`;
        this.#o.logger.warn(
          { call_id: callId, tool: request.tool },
          "caller tool call hit the host backstop",
        );
        this.#o.cancel(callId, message);
        resolve({ ok: false, error: { reason: "worker_unreachable", message } });
      }, backstopMs);
      backstop.unref();
    });
    const entry: Entry = { done, waiters: 0, answered: false };
    this.#calls.set(callId, entry);
    void done.then(() => {
      clearTimeout(backstop);
      // Someone waited: the droid has its answer, nothing to keep. Nobody did (its connection
      // was gone): keep it a while for the re-send. (The session object keeps it longer anyway.)
      setImmediate(() => {
        if (this.#calls.get(callId) !== entry) return;
        if (entry.answered) {
          this.#calls.delete(callId);
          return;
        }
        const forget = setTimeout(() => {
          if (this.#calls.get(callId) === entry) this.#calls.delete(callId);
        }, this.#o.keepOutcomeMs ?? 120_000);
        forget.unref();
      });
    });
    return entry;
  }

  #awaitReclaim(callId: string, entry: Entry): void {
    if (entry.waiters > 1) return;
    clearTimeout(entry.reclaimTimer);
    entry.reclaimTimer = setTimeout(() => {
      if (entry.waiters > 0 || this.#calls.get(callId) !== entry) return;
      this.#calls.delete(callId);
      this.#o.cancel(callId, "the droid's MCP client disconnected");
    }, this.#o.reclaimGraceMs ?? 5_000);
    entry.reclaimTimer.unref();
  }
}
