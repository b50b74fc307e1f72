import type { ProgressToken } from "@modelcontextprotocol/sdk/types.js";
import type { ProgressUpdate } from "../flows/context.js";
import { SseStream } from "../streams/sse.js";
import { type HttpReply, jsonReply } from "./json-rpc.js";

/** What a handler that waits reports between its slices of waiting. */
export type { ProgressUpdate };

/**
 * How one POST /mcp is answered. JSON, unless a handler reports progress while the client
 * accepts `text/event-stream`: then the answer becomes an SSE stream, carrying
 * `notifications/progress` for a request that gave a `progressToken` (a keep-alive comment for
 * one that did not) and, at the end, the responses; the Worker fetches that stream from the
 * object (see AnswerStreams). A write to the stream that fails means the client went away:
 * `progress` says so, and the handler stops waiting. A client that takes only JSON gets its
 * progress on the session's GET stream, when it has one open.
 */
export class PostReply {
  readonly #acceptsSse: boolean;
  readonly #getStream: () => SseStream | null;
  readonly #keep: (stream: SseStream) => string;
  readonly #onGone: () => void;
  #sse: SseStream | null = null;
  #opened: () => void = () => {};
  readonly #switched = new Promise<"sse">((resolve) => {
    this.#opened = () => resolve("sse");
  });
  readonly #lastProgress = new Map<ProgressToken, number>();
  #markGone: () => void = () => {};
  /** Settles when the streamed answer ends: closed by us, or dropped by the client. */
  readonly #gone = new Promise<void>((resolve) => {
    this.#markGone = resolve;
  });

  /**
   * `getStream`: the session's GET stream; `keep`: holds a streamed answer for the Worker, naming
   * it; `onGone`: runs once if the client drops the streamed answer before it ends.
   */
  constructor(
    acceptsSse: boolean,
    getStream: () => SseStream | null,
    keep: (stream: SseStream) => string,
    onGone: () => void = () => {},
  ) {
    this.#acceptsSse = acceptsSse;
    this.#getStream = getStream;
    this.#keep = keep;
    this.#onGone = onGone;
  }

  /** Reports progress of the request with `token` (if any); false once the client is gone. */
  progress(token: ProgressToken | undefined, update: ProgressUpdate): boolean {
    const message = token === undefined ? null : this.#progressMessage(token, update);
    if (!this.#acceptsSse) {
      if (message !== null) this.#getStream()?.event(message);
      return true;
    }
    const sse = this.#open();
    if (message === null) sse.comment("waiting");
    else sse.event(message);
    return !sse.dead;
  }

  /** The HTTP answer: JSON when every response was ready before any progress, else a stream to fetch. */
  async settle(
    responses: Promise<unknown[]>,
    batch: boolean,
    headers: Record<string, string>,
  ): Promise<HttpReply> {
    const first = await Promise.race([responses, this.#switched]);
    const sse = this.#sse;
    if (sse === null && first !== "sse") return jsonReply(batch ? first : first[0], headers);
    const stream = sse ?? this.#open();
    let answered = false;
    void responses.then(
      (all) => {
        answered = true;
        for (const response of all) stream.event(JSON.stringify(response));
        stream.close();
      },
      () => {
        answered = true;
        stream.close();
      },
    );
    this.#gone.then(() => {
      if (!answered) this.#onGone();
    });
    return { status: 200, headers, streamId: this.#keep(stream) };
  }

  #open(): SseStream {
    if (this.#sse === null) {
      this.#sse = new SseStream(() => this.#markGone());
      this.#opened();
    }
    return this.#sse;
  }

  /** A `notifications/progress`; its progress only ever grows, as the spec requires. */
  #progressMessage(token: ProgressToken, update: ProgressUpdate): string {
    const last = this.#lastProgress.get(token) ?? 0;
    const progress = Math.round(Math.max(update.progress, last + 0.001) * 1000) / 1000;
    this.#lastProgress.set(token, progress);
    const params = { progressToken: token, progress, message: update.message };
    return JSON.stringify({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: update.total === undefined ? params : { ...params, total: update.total },
    });
  }
}
