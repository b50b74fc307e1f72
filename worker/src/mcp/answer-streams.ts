import type { SseStream } from "../streams/sse.js";

/** How long a streamed answer waits for the Worker to fetch it before it counts as abandoned. */
const CLAIM_MS = 10_000;

/**
 * SSE answers to POSTs, waiting for the Worker to fetch them. A POST is answered over RPC; when
 * its answer turns into a stream, the RPC reply names the stream and the Worker fetches it from
 * the object, because only a fetched stream learns that its client went away (a write to it
 * fails). One the Worker never fetches is closed after CLAIM_MS, so its handler stops waiting.
 */
export class AnswerStreams {
  readonly #waiting = new Map<string, { stream: SseStream; timer: ReturnType<typeof setTimeout> }>();

  /** Keeps `stream` for the Worker to fetch; returns its id. */
  add(stream: SseStream): string {
    const id = crypto.randomUUID();
    const timer = setTimeout(() => {
      this.#waiting.delete(id);
      stream.close();
    }, CLAIM_MS);
    this.#waiting.set(id, { stream, timer });
    return id;
  }

  /** The stream with `id`, once; null when there is none (fetched already, or abandoned). */
  claim(id: string): SseStream | null {
    const entry = this.#waiting.get(id);
    if (!entry) return null;
    clearTimeout(entry.timer);
    this.#waiting.delete(id);
    return entry.stream;
  }
}
