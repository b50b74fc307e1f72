/** One Server-Sent Event (comments are counted, not returned). */
export interface SseEvent {
  id: string | null;
  data: string;
  retry: number | null;
}

type Waiter = { match(e: SseEvent): boolean; resolve(e: SseEvent): void };

/**
 * Reads an SSE response body as it streams. `next` waits for the first unread event that
 * matches; `all` keeps every event. Cancel it at the end so the server sees the reader go.
 */
export class SseReader {
  readonly all: SseEvent[] = [];
  comments = 0;
  readonly #inbox: SseEvent[] = [];
  readonly #waiters = new Set<Waiter>();
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer = "";
  #end: () => void = () => {};
  /** Settles when the stream ends (the server closed it, or it failed). */
  readonly ended: Promise<void> = new Promise((resolve) => {
    this.#end = resolve;
  });

  constructor(body: ReadableStream<Uint8Array> | null) {
    if (!body) throw new Error("the response has no body");
    this.#reader = body.getReader();
    void this.#pump();
  }

  /** The first unread event passing `match` (by default: any event with data). */
  next(match: (e: SseEvent) => boolean = (e) => e.data !== "", timeoutMs = 2000): Promise<SseEvent> {
    const index = this.#inbox.findIndex(match);
    const found = this.#inbox[index];
    if (found) {
      this.#inbox.splice(index, 1);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`no matching SSE event within ${timeoutMs} ms; got ${JSON.stringify(this.all)}`));
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Events whose data is a JSON object, parsed. */
  async nextJson(match: (value: unknown) => boolean = () => true, timeoutMs = 2000) {
    const event = await this.next((e) => e.data !== "" && match(JSON.parse(e.data)), timeoutMs);
    return { id: event.id, value: JSON.parse(event.data) as unknown };
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  async #pump(): Promise<void> {
    const decoder = new TextDecoder();
    for (;;) {
      const chunk = await this.#reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) {
        this.#end();
        return;
      }
      this.#buffer += decoder.decode(chunk.value, { stream: true });
      let end = this.#buffer.indexOf("\n\n");
      while (end !== -1) {
        this.#parse(this.#buffer.slice(0, end));
        this.#buffer = this.#buffer.slice(end + 2);
        end = this.#buffer.indexOf("\n\n");
      }
    }
  }

  #parse(block: string): void {
    const event: SseEvent = { id: null, data: "", retry: null };
    let fields = 0;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) {
        this.comments += 1;
        continue;
      }
      const colon = line.indexOf(":");
      const name = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      fields += 1;
      if (name === "id") event.id = value;
      else if (name === "data") data.push(value);
      else if (name === "retry") event.retry = Number(value);
    }
    if (fields === 0) return;
    event.data = data.join("\n");
    this.all.push(event);
    for (const waiter of this.#waiters) {
      if (waiter.match(event)) {
        this.#waiters.delete(waiter);
        waiter.resolve(event);
        return;
      }
    }
    this.#inbox.push(event);
  }
}
