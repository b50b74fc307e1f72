/**
 * The newest lines of a process's output with the time each arrived: what `container logs`
 * reads under the process runtime, where there is no engine keeping them. Bounded by count and
 * by line length.
 */
import { LineSplitter } from "../../../protocol/line-splitter.js";

const MAX_LINE_CHARS = 8 * 1024;

interface Entry {
  at: number;
  text: string;
}

export class LineRing {
  readonly #max: number;
  readonly #entries: Entry[] = [];
  readonly #splitters = new Map<string, LineSplitter>();

  constructor(maxLines = 10_000) {
    this.#max = maxLines;
  }

  /** Feeds a chunk of one stream; complete lines are kept (an over-long line is cut). */
  push(stream: string, chunk: Buffer, now = Date.now()): void {
    let splitter = this.#splitters.get(stream);
    if (!splitter) {
      splitter = new LineSplitter(64 * 1024);
      this.#splitters.set(stream, splitter);
    }
    for (const event of splitter.push(chunk)) {
      this.add(event.kind === "line" ? event.text : `[a ${event.bytes}-byte line was dropped]`, now);
    }
  }

  add(text: string, now = Date.now()): void {
    this.#entries.push({
      at: now,
      text: text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…` : text,
    });
    if (this.#entries.length > this.#max) this.#entries.splice(0, this.#entries.length - this.#max);
  }

  /** The newest `tail` lines at or after `since` (epoch seconds), as `<ISO time> <text>`. */
  read(tail: number, since?: number): string[] {
    const from = since === undefined ? 0 : since * 1000;
    return this.#entries
      .filter((e) => e.at >= from)
      .slice(-tail)
      .map((e) => `${new Date(e.at).toISOString()} ${e.text}`);
  }
}
