import { Cancelled, encodeNotification, encodeRequest, type Frame } from "../../../protocol/rpc/messages.js";
import type { RequestMethod, SentParams } from "../../../protocol/rpc/method.js";
import { type ErrorCode, fail, ok, type Result } from "../errors.js";
import { trySend } from "./host-channels.js";

interface PendingRequest {
  /** The connection it was sent on: only that one can answer it. */
  ws: WebSocket;
  method: string;
  resolve(result: Result<unknown>): void;
  timer: ReturnType<typeof setTimeout>;
  /** The caller's name for it, when it may be cancelled (`cancel`). */
  cancelKey?: string;
  /** The project it is about and who hears its progress (`progress`), for a project request. */
  progress?: { projectId: string; listener: ProgressListener };
}

/** Hears a request's progress lines (a function the caller passed over RPC: calls may fail once it is gone). */
export type ProgressListener = (message: string) => unknown;

export interface SendOptions {
  timeoutMs?: number | undefined;
  cancelKey?: string | undefined;
  progress?: { projectId: string; listener: ProgressListener } | undefined;
}

/** What the pending requests need from the registry. */
export interface PendingHostRequestsDeps {
  /** How long a host may take to answer when the caller names no deadline. */
  ackTimeoutMs(): number;
}

/**
 * The registry's requests to hosts that wait for an answer, by request id. Each ends exactly once:
 * answered on the channel it was sent on (an error answer becomes a typed failure, see
 * HOST_REASONS), cancelled by its caller's key, failed at its deadline, or failed at once when its
 * channel closes. They live in memory only: a request outlives neither the channel nor the object.
 */
export class PendingHostRequests {
  readonly #d: PendingHostRequestsDeps;
  readonly #pending = new Map<string, PendingRequest>();

  constructor(deps: PendingHostRequestsDeps) {
    this.#d = deps;
  }

  /**
   * Sends a request on a host's channel and waits for its answer (a failure, never a throw): of a
   * method's descriptor (params typed by it), or of a bare name (a project request passed on from
   * a tool, whose answer its caller parses). The answer comes back as the host sent it: the
   * registry's own requests need only whether they succeeded.
   */
  send<M extends RequestMethod>(
    ws: WebSocket,
    method: M,
    params: SentParams<M>,
    options?: SendOptions,
  ): Promise<Result<unknown>>;
  send(ws: WebSocket, method: string, params: unknown, options?: SendOptions): Promise<Result<unknown>>;
  send(
    ws: WebSocket,
    descriptor: RequestMethod | string,
    params: unknown,
    options: SendOptions = {},
  ): Promise<Result<unknown>> {
    const method = typeof descriptor === "string" ? descriptor : descriptor.name;
    const id = crypto.randomUUID();
    const timeoutMs = options.timeoutMs ?? this.#d.ackTimeoutMs();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve(fail("host_error", `the host did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, {
        ws,
        method,
        resolve,
        timer,
        ...(options.cancelKey ? { cancelKey: options.cancelKey } : {}),
        ...(options.progress ? { progress: options.progress } : {}),
      });
      if (!trySend(ws, encodeRequest(id, method, params))) {
        clearTimeout(timer);
        this.#pending.delete(id);
        resolve(fail("host_error", "the host's connection closed"));
      }
    });
  }

  /** A host's answer: settles the request it answers; false when none waits for it. */
  settle(frame: Extract<Frame, { kind: "result" | "error" }>): boolean {
    const pending = frame.id === null ? undefined : this.#pending.get(String(frame.id));
    if (!pending) return false;
    this.#pending.delete(String(frame.id));
    clearTimeout(pending.timer);
    pending.resolve(frame.kind === "result" ? ok(frame.result) : hostRefusal(frame.error));
    return true;
  }

  /** A host's progress for project `projectId`: told to each request about it still waiting on that channel. */
  progress(ws: WebSocket, projectId: string, message: string): void {
    for (const pending of this.#pending.values()) {
      if (pending.ws !== ws || pending.progress?.projectId !== projectId) continue;
      try {
        void Promise.resolve(pending.progress.listener(message)).catch(() => {});
      } catch {
        // The caller is gone; its request still ends as it will.
      }
    }
  }

  /**
   * Cancels the request named `cancelKey`: the host hears `notifications/cancelled` for it and the
   * request answers `cancelled` now. False when no such request waits (already answered).
   */
  cancel(cancelKey: string, reason: string): boolean {
    for (const [id, pending] of this.#pending) {
      if (pending.cancelKey !== cancelKey) continue;
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      trySend(pending.ws, encodeNotification(Cancelled, { requestId: id, reason }));
      pending.resolve(fail("cancelled", `${pending.method} was cancelled: ${reason}`));
      return true;
    }
    return false;
  }

  /** A channel closed: nothing answers what was asked on it, so it fails now, not at its deadline. */
  closed(ws: WebSocket): void {
    for (const [id, pending] of this.#pending) {
      if (pending.ws !== ws) continue;
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      const why = `the host's connection closed before it answered ${pending.method}`;
      pending.resolve(fail("host_error", why));
    }
  }
}

/** Host refusals that keep their meaning for the caller; any other is host_error. */
const HOST_REASONS: Record<string, ErrorCode> = {
  host_full: "host_full",
  busy: "conflict",
  not_found: "not_found",
  invalid: "invalid_arguments",
  not_running: "not_running",
  unsupported: "unsupported",
  image_not_found: "image_not_found",
  rejected: "conflict",
};

/** A host's error answer as a typed failure (see HOST_REASONS). */
function hostRefusal(error: { message: string; data?: unknown }): Result<never> {
  const data = error.data;
  const reason = typeof data === "object" && data !== null && "reason" in data ? String(data.reason) : "";
  const code: ErrorCode = HOST_REASONS[reason] ?? "host_error";
  return fail(code, `the host refused: ${error.message}`);
}
