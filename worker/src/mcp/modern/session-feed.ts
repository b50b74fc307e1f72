import { z } from "zod";
import { parseJson } from "../../../../protocol/json.js";
import { forward } from "../../auth/principal-header.js";
import type { CallerPrincipal } from "../../auth/tokens.js";
import type { Env } from "../../env.js";
import type { Log } from "../../log.js";
import { objects } from "../../objects/keys.js";

/** One session event as the feed relays it: the event as the session stored it, and what is read of it. */
export interface FeedEvent {
  index: number;
  type: string;
  event: Record<string, unknown>;
}

/** What is read of an event; the rest is relayed as is. */
const EventFrameSchema = z.looseObject({ index: z.number().int().nonnegative(), type: z.string() });

/** Unread text past which the upstream counts as broken (an event is at most a tunnel frame, 1 MiB). */
const MAX_BUFFERED_CHARS = 8 * 1024 * 1024;

/**
 * One session's events, read in the Worker from the session object's plain SSE subscription
 * (`GET /v1/sessions/:id/events`, the same stream and access check): the backlog from `since`,
 * then each event as it is appended. While it is open, a feed of the session's owner counts as
 * its caller's presence. `events()` ends when the object closes the stream (the session ended,
 * the token was revoked, the object restarted) or `cancel()` is called.
 */
export class SessionFeed {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #log: Log;

  private constructor(reader: ReadableStreamDefaultReader<Uint8Array>, log: Log) {
    this.#reader = reader;
    this.#log = log;
  }

  /** Opens the subscription; null when the session object refuses it (unknown, or not readable). */
  static async open(
    env: Env,
    principal: CallerPrincipal,
    sessionId: string,
    since: number,
    log: Log,
  ): Promise<SessionFeed | null> {
    const request = new Request(`https://listen.internal/?since_index=${since}`, {
      headers: { accept: "text/event-stream" },
    });
    const res = await objects.session(env, sessionId).fetch(forward(request, principal, "/events"));
    if (res.status !== 200 || res.body === null) {
      await res.body?.cancel();
      return null;
    }
    return new SessionFeed(res.body.getReader(), log.child({ session: sessionId }));
  }

  /** The events, in log order, until the stream ends. */
  async *events(): AsyncGenerator<FeedEvent> {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const chunk = await this.#reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end !== -1) {
        const event = this.#frame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event !== null) yield event;
        end = buffer.indexOf("\n\n");
      }
      if (buffer.length > MAX_BUFFERED_CHARS) {
        this.#log.warn("a session's event stream sent an oversized frame; dropping it");
        this.cancel();
        return;
      }
    }
  }

  /** Closes the subscription (the session object notices, and counts the reader gone). */
  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }

  /** An SSE block's event; null for blocks without data (the `retry` hint, keep-alive comments). */
  #frame(block: string): FeedEvent | null {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data === "") return null;
    const json = parseJson(data);
    const frame = json.ok ? EventFrameSchema.safeParse(json.value) : null;
    if (!frame?.success) {
      this.#log.warn("skipped an unreadable session event frame");
      return null;
    }
    return { index: frame.data.index, type: frame.data.type, event: frame.data };
  }
}
