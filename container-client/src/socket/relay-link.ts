/**
 * The container-client's link to the host-agent. Caller tool calls are durable here: each has a
 * call id, and a call in flight when the connection drops (the host-agent restarted, say) is
 * re-sent under the same id once the socket is back, so it is answered exactly once. A call the
 * droid cancels is cancelled at the host (now, or right after the next reconnect). The only
 * deadline of our own is the backstop: the session's deadline plus the reconnect budget.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import { ResumableCalls } from "../../../lib/rpc/resumable-calls.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { ParsedResult, RequestMethod, SentParams } from "../../../protocol/rpc/method.js";
import { LegacyCallerToolsConfigSchema, SocketMethods } from "../../../protocol/socket.js";
import { RelayCallError } from "./relay-errors.js";
import { SocketSession } from "./socket-session.js";

export interface RelayLinkOptions {
  socketPath: string;
  sessionToken: string;
  logger: Logger;
  onConfig(config: CallerToolsConfig): void;
  client: { name: string; version: string };
  /** Each (re)connection, once bound (e.g. to list Oubliette's tools again). */
  onConnected?(): void;
  /** The host-agent says the droid's Oubliette tools may have changed. */
  onOublietteToolsChanged?(): void;
  /** The host-agent refused the session's secret: nothing will come over this link. */
  onRejected?(message: string): void;
}

export interface CallOptions {
  /** Give up after this long (the session's backstop), with reason host_unreachable. */
  backstopMs: number;
  signal?: AbortSignal;
}

/** How a caller tool call ends here: the caller's result, or why there is none. */
type Outcome = { ok: true; result: JsonValue } | { ok: false; error: RelayCallError };

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

export class RelayLink {
  readonly #log: Logger;
  readonly #session: SocketSession;
  readonly #calls: ResumableCalls<Outcome>;
  #rejected: string | null = null;
  #closed = false;

  constructor(options: RelayLinkOptions) {
    this.#log = options.logger.child({ component: "relay-link" });
    this.#calls = new ResumableCalls<Outcome>({
      method: SocketMethods.callerTool.name,
      peer: () => this.#session.peer,
      answered: (result) => {
        const parsed = SocketMethods.callerTool.result.safeParse(result);
        return parsed.success
          ? { ok: true, result: parsed.data }
          : failed("rpc_error", "the host-agent sent a result that is not JSON");
      },
      refused: (err) =>
        err instanceof RpcError
          ? failed("rpc_error", err.message, err.code, err.data)
          : failed("rpc_error", String(err)),
      // With no host-agent for a long time, the oldest cancellations are the least useful.
      maxQueuedCancels: 1_000,
    });
    this.#session = new SocketSession({
      socketPath: options.socketPath,
      logger: this.#log,
      hello: () => ({ session_token: options.sessionToken, role: "client", client: options.client }),
      serve: (peer) => {
        peer.onNotification(SocketMethods.callerToolsConfig, (config) => options.onConfig(config));
        peer.onNotification(SocketMethods.oublietteToolsChanged, () => options.onOublietteToolsChanged?.());
      },
      adopt: (raw) => {
        const legacy = LegacyCallerToolsConfigSchema.safeParse(raw);
        if (legacy.success) options.onConfig(legacy.data.params);
        return legacy.success;
      },
      connected: (peer) => {
        this.#calls.resend(peer);
        options.onConnected?.();
      },
      rejected: (message) => {
        this.#rejected = message;
        options.onRejected?.(message);
        this.#calls.settleAll(() =>
          failed("not_connected", `the host-agent rejected the session token: ${message}`),
        );
      },
    });
  }

  get connected(): boolean {
    return this.#session.peer !== null;
  }

  /** Starts connecting in the background; calls made before the link is up wait for it. */
  start(): void {
    this.#session.start();
  }

  /**
   * One request to the host-agent on the current connection (Oubliette's tools: nothing to
   * resume, the droid asks again); resolves with its result parsed by `method`'s schema, rejects
   * with the RpcError the host answered, or at once when there is no connection.
   */
  async request<M extends RequestMethod>(
    method: M,
    params: SentParams<M>,
    signal?: AbortSignal,
  ): Promise<ParsedResult<M>> {
    const peer = this.#session.peer;
    if (!peer)
      throw new RpcError(RpcErrorCode.ServerError, "not connected to the host-agent", {
        reason: "host_unreachable",
      });
    return peer.request(method, params, signal ? { signal } : {});
  }

  /** Runs one caller tool; resolves with the caller's result or rejects with a RelayCallError. */
  async callerTool(tool: string, args: JsonObject, options: CallOptions): Promise<JsonValue> {
    if (this.#closed) throw new RelayCallError("closed", "the container-client is shutting down");
    if (this.#rejected !== null) {
      throw new RelayCallError(
        "not_connected",
        `the host-agent rejected the session token: ${this.#rejected}`,
      );
    }
    const tooLarge = checkSize("arguments", args);
    if (tooLarge) throw new RelayCallError("too_large", tooLarge.message);
    const callId = randomUUID();
    const { signal } = options;
    const outcome = await this.#calls.call(
      callId,
      { call_id: callId, tool, arguments: args },
      {
        ...(signal && {
          abort: {
            signal,
            cancel: () => ({
              outcome: failed("cancelled", "the call was cancelled"),
              reason: "the droid cancelled the call",
            }),
          },
        }),
        backstop: {
          ms: options.backstopMs,
          cancel: () => {
            const message = `no answer from the host-agent within ${formatSeconds(options.backstopMs)} (the caller's deadline plus the reconnect budget)`;
            this.#log.warn({ call_id: callId, tool }, "caller tool call hit the container-client backstop");
            return {
              outcome: failed("timeout", message, RpcErrorCode.ServerError, { reason: "host_unreachable" }),
              reason: message,
            };
          },
        },
      },
    );
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /** Stops reconnecting, closes the socket and fails every waiting call with `closed`. */
  async close(): Promise<void> {
    this.#closed = true;
    // Nobody will wait for these any more: say so, so the caller is not told "delivered".
    this.#calls.settleAll(
      () => failed("closed", "the container-client is shutting down"),
      "the droid's MCP client shut down",
    );
    await this.#session.close();
  }
}

function failed(...args: ConstructorParameters<typeof RelayCallError>): Outcome {
  return { ok: false, error: new RelayCallError(...args) };
}
