/**
 * A Server-Sent Events response body that notices when its reader is gone. workerd does not
 * signal an SSE client's disconnect to a Durable Object (`request.signal` never fires), but a
 * write to a cancelled stream rejects: every write (keep-alives included) is a liveness probe.
 */
const encoder = new TextEncoder();

/**
 * Bytes queued for a reader that does not read; past this the reader counts as gone. It holds
 * dozens of events at the size budget's largest (protocol/limits.ts), thousands of usual ones.
 */
export const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
/** The queue is counted in bytes (a count of chunks would let large events pile up unbounded). */
const HIGH_WATER_MARK = 64 * 1024;

export const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

export class SseStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #onDead: () => void;
  #dead = false;
  #keepAlive: ReturnType<typeof setInterval> | undefined;
  #watch: ReturnType<typeof setInterval> | undefined;

  /** `onDead` runs once, when the reader goes away or the stream is closed. */
  constructor(onDead: () => void) {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      undefined,
      new ByteLengthQueuingStrategy({ highWaterMark: HIGH_WATER_MARK }),
    );
    this.readable = readable;
    this.#writer = writable.getWriter();
    this.#onDead = onDead;
    this.#writer.closed.catch(() => this.#markDead());
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** Sends one event; `id` lets the client resume with Last-Event-ID. */
  event(data: string, id?: string | number): void {
    const idLine = id === undefined ? "" : `id: ${id}\n`;
    this.#write(`${idLine}data: ${data}\n\n`);
  }

  /** Sends the reconnect delay the client should use. */
  retry(ms: number): void {
    this.#write(`retry: ${ms}\n\n`);
  }

  /** An event with an id and no data: primes the client's Last-Event-ID (MCP 2025-11-25). */
  prime(id: string | number): void {
    this.#write(`id: ${id}\ndata: \n\n`);
  }

  /** Sends a comment (clients ignore it; a write that fails tells the reader is gone). */
  comment(text: string): void {
    this.#write(`: ${text}\n\n`);
  }

  /** Sends a comment every `ms` so proxies keep the stream open and a dead reader is noticed. */
  keepAlive(ms: number): void {
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
    this.#keepAlive = setInterval(() => this.comment("keep-alive"), ms);
  }

  /**
   * Closes the stream once `stillAllowed` says no (its token was revoked or expired), asking
   * every `ms`. A failed check counts as allowed: a blip of the token directory is not a revocation.
   */
  watch(stillAllowed: () => Promise<boolean>, ms: number): void {
    if (this.#watch !== undefined) clearInterval(this.#watch);
    this.#watch = setInterval(() => {
      stillAllowed().then(
        (allowed) => {
          if (!allowed) this.close();
        },
        () => {},
      );
    }, ms);
  }

  close(): void {
    if (this.#dead) return;
    this.#markDead();
    this.#writer.close().catch(() => {});
  }

  #write(text: string): void {
    if (this.#dead) return;
    const desired = this.#writer.desiredSize;
    if (desired !== null && desired < HIGH_WATER_MARK - MAX_QUEUED_BYTES) {
      this.close();
      return;
    }
    this.#writer.write(encoder.encode(text)).catch(() => this.#markDead());
  }

  #markDead(): void {
    if (this.#dead) return;
    this.#dead = true;
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
    if (this.#watch !== undefined) clearInterval(this.#watch);
    this.#onDead();
  }
}
