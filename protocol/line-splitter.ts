/**
 * Splits a byte stream into '\n'-terminated lines with a cap on line length. A line longer than
 * the cap is reported once as `oversized` and its bytes are dropped up to the next newline, so
 * one bad line never costs the connection. Works on any Uint8Array (Node Buffers included).
 */
export type LineEvent = { kind: "line"; text: string } | { kind: "oversized"; bytes: number };

const NEWLINE = 0x0a;

export class LineSplitter {
  readonly #maxBytes: number;
  readonly #decoder = new TextDecoder();
  #parts: Uint8Array[] = [];
  #size = 0;
  /** Bytes dropped from the current oversized line; -1 while not discarding. */
  #discarded = -1;

  constructor(maxBytes: number) {
    if (!Number.isInteger(maxBytes) || maxBytes <= 0)
      throw new RangeError("maxBytes must be a positive integer");
    this.#maxBytes = maxBytes;
  }

  /** Feeds a chunk; returns the complete lines (and oversize reports) it finished. */
  push(chunk: Uint8Array): LineEvent[] {
    const out: LineEvent[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      this.#take(chunk.subarray(start, end));
      if (nl === -1) break;
      this.#finishLine(out);
      start = nl + 1;
    }
    return out;
  }

  /** Flushes a final line that had no trailing newline. */
  end(): LineEvent[] {
    const out: LineEvent[] = [];
    if (this.#size > 0 || this.#discarded >= 0) this.#finishLine(out);
    return out;
  }

  #take(piece: Uint8Array): void {
    if (piece.length === 0) return;
    if (this.#discarded >= 0) {
      this.#discarded += piece.length;
      return;
    }
    if (this.#size + piece.length > this.#maxBytes) {
      this.#discarded = this.#size + piece.length;
      this.#parts = [];
      this.#size = 0;
      return;
    }
    // Copy: the caller may reuse the chunk's buffer.
    this.#parts.push(piece.slice());
    this.#size += piece.length;
  }

  #finishLine(out: LineEvent[]): void {
    if (this.#discarded >= 0) {
      out.push({ kind: "oversized", bytes: this.#discarded });
      this.#discarded = -1;
      return;
    }
    const text = this.#decode();
    this.#parts = [];
    this.#size = 0;
    const trimmed = text.endsWith("\r") ? text.slice(0, -1) : text;
    if (trimmed.length > 0) out.push({ kind: "line", text: trimmed });
  }

  #decode(): string {
    if (this.#parts.length === 1) return this.#decoder.decode(this.#parts[0]);
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const p of this.#parts) {
      all.set(p, at);
      at += p.length;
    }
    return this.#decoder.decode(all);
  }
}
