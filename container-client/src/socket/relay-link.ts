/**
 * The container-client's link to the host-agent. Caller tool calls are durable here: each has a
 * call id, and a call in flight when the connection drops (the host-agent restarted, say) is
 * re-sent under the same id once the socket is back, so it is answered exactly once. A call the
 * droid cancels is cancelled at the host (now, or right after the next reconnect). The only
 * deadline of our own is the backstop: the session's deadline plus the reconnect budget.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { checkSize } from "../../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { CANCELLED } from "../../../protocol/rpc/messages.js";
import {
  CallerToolResultSchema,
  CallerToolsConfigParamsSchema,
  LegacyCallerToolsConfigSchema,
  SocketMethod,
} from "../../../protocol/socket.js";
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

interface InFlight {
  tool: string;
  arguments: JsonObject;
  resolve(result: JsonValue): void;
  reject(error: RelayCallError): void;
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

export class RelayLink {
  readonly #log: Logger;
  readonly #session: SocketSession;
  readonly #calls = new Map<string, InFlight>();
  /** Cancellations that could not be sent yet (no connection). */
  readonly #cancels = new Map<string, string>();
  #rejected: string | null = null;
  #closed = false;

  constructor(options: RelayLinkOptions) {
    this.#log = options.logger.child({ component: "relay-link" });
    this.#session = new SocketSession({
      socketPath: options.socketPath,
      logger: this.#log,
      hello: () => ({ session_token: options.sessionToken, role: "client", client: options.client }),
      serve: (peer) => {
        peer.onNotification(SocketMethod.callerToolsConfig, CallerToolsConfigParamsSchema, (config) =>
          options.onConfig(config),
        );
        peer.onNotification(SocketMethod.oublietteToolsChanged, z.unknown(), () =>
          options.onOublietteToolsChanged?.(),
        );
      },
      adopt: (raw) => {
        const legacy = LegacyCallerToolsConfigSchema.safeParse(raw);
        if (legacy.success) options.onConfig(legacy.data.params);
        return legacy.success;
      },
      connected: (peer) => {
        this.#resend(peer);
        options.onConnected?.();
      },
      rejected: (message) => {
        this.#rejected = message;
        options.onRejected?.(message);
        for (const [callId, call] of [...this.#calls]) {
          this.#calls.delete(callId);
          call.reject(
            new RelayCallError("not_connected", `the host-agent rejected the session token: ${message}`),
          );
        }
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
   * resume, the droid asks again); rejects with the RpcError the host answered, or at once when
   * there is no connection.
   */
  async request(method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    const peer = this.#session.peer;
    if (!peer)
      throw new RpcError(RpcErrorCode.ServerError, "not connected to the host-agent", {
        reason: "host_unreachable",
      });
    return peer.request(method, params, signal ? { signal } : {});
  }

  /** Runs one caller tool; resolves with the caller's result or rejects with a RelayCallError. */
  callerTool(tool: string, args: JsonObject, options: CallOptions): Promise<JsonValue> {
    if (this.#closed)
      return Promise.reject(new RelayCallError("closed", "the container-client is shutting down"));
    if (this.#rejected !== null) {
      return Promise.reject(
        new RelayCallError("not_connected", `the host-agent rejected the session token: ${this.#rejected}`),
      );
    }
    const tooLarge = checkSize("arguments", args);
    if (tooLarge) return Promise.reject(new RelayCallError("too_large", tooLarge.message));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new RelayCallError("cancelled", "the call was cancelled"));
    const callId = randomUUID();
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(backstop);
        signal?.removeEventListener("abort", onAbort);
        this.#calls.delete(callId);
      };
      const onAbort = () => {
        finish();
        this.#cancel(callId, "the droid cancelled the call");
        reject(new RelayCallError("cancelled", "the call was cancelled"));
      };
      const backstop = setTimeout(() => {
        finish();
        const message = `no answer from the host-agent within ${formatSeconds(options.backstopMs)} (the caller's deadline plus the reconnect budget)`;
        this.#log.warn({ call_id: callId, tool }, "caller tool call hit the container-client backstop");
        this.#cancel(callId, message);
        reject(
          new RelayCallError("timeout", message, RpcErrorCode.ServerError, { reason: "host_unreachable" }),
        );
      }, options.backstopMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      const call: InFlight = {
        tool,
        arguments: args,
        resolve: (result) => {
          finish();
          resolve(result);
        },
        reject: (error) => {
          finish();
          reject(error);
        },
      };
      this.#calls.set(callId, call);
      const peer = this.#session.peer;
      if (peer) this.#send(peer, callId, call);
    });
  }

  /** Stops reconnecting, closes the socket and fails every waiting call with `closed`. */
  async close(): Promise<void> {
    this.#closed = true;
    const peer = this.#session.peer;
    for (const [callId, call] of [...this.#calls]) {
      // Nobody will wait for these any more: say so, so the caller is not told "delivered".
      peer?.notify(CANCELLED, { requestId: callId, reason: "the droid's MCP client shut down" });
      call.reject(new RelayCallError("closed", "the container-client is shutting down"));
    }
    await this.#session.close();
  }

  #resend(peer: RpcPeer): void {
    for (const [callId, reason] of this.#cancels) {
      if (peer.notify(CANCELLED, { requestId: callId, reason })) this.#cancels.delete(callId);
    }
    for (const [callId, call] of this.#calls) this.#send(peer, callId, call);
  }

  #send(peer: RpcPeer, callId: string, call: InFlight): void {
    peer
      .request(
        SocketMethod.callerTool,
        { call_id: callId, tool: call.tool, arguments: call.arguments },
        { id: callId },
      )
      .then(
        (result) => {
          if (this.#calls.get(callId) !== call) return;
          const parsed = CallerToolResultSchema.safeParse(result);
          if (parsed.success) call.resolve(parsed.data);
          else call.reject(new RelayCallError("rpc_error", "the host-agent sent a result that is not JSON"));
        },
        (err: unknown) => {
          if (this.#calls.get(callId) !== call) return;
          if (!(err instanceof RpcError)) {
            call.reject(new RelayCallError("rpc_error", String(err)));
            return;
          }
          // The connection dropped: the call stays in flight and is re-sent on the next one.
          if (err.code === RpcErrorCode.ConnectionClosed) return;
          call.reject(new RelayCallError("rpc_error", err.message, err.code, err.data));
        },
      );
  }

  #cancel(callId: string, reason: string): void {
    const peer = this.#session.peer;
    if (peer?.notify(CANCELLED, { requestId: callId, reason })) return;
    this.#cancels.set(callId, reason);
    // Bounded: with no host-agent for a long time, the oldest cancellations are the least useful.
    if (this.#cancels.size > 1_000) this.#cancels.delete(this.#cancels.keys().next().value ?? "");
  }
}
