import { CancelledNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "../errors.js";

type RequestId = string | number;

/**
 * The requests of one MCP session being answered, so that `notifications/cancelled` (which names a
 * request id) can abort the one it means: a tool call waiting for its job cancels the job.
 */
export class InFlightCalls {
  readonly #calls = new Map<RequestId, AbortController>();

  /** A request starts; its signal aborts when the client cancels it. */
  begin(id: RequestId): AbortSignal {
    const controller = new AbortController();
    this.#calls.set(id, controller);
    return controller.signal;
  }

  /** The request was answered. */
  end(id: RequestId, signal: AbortSignal): void {
    if (this.#calls.get(id)?.signal === signal) this.#calls.delete(id);
  }

  /**
   * A message of the client: when it is `notifications/cancelled`, the request it names is
   * aborted (an unknown or answered one is ignored, as MCP says).
   */
  noticeCancel(message: unknown): void {
    const cancelled = CancelledNotificationSchema.safeParse(message);
    const id = cancelled.data?.params.requestId;
    if (id === undefined) return;
    const reason = cancelled.data?.params.reason ?? "the client cancelled the request";
    this.#calls.get(id)?.abort(new AppError("cancelled", reason));
  }
}
