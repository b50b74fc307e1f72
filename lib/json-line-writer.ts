/**
 * Writes newline-terminated JSON lines to a socket, honouring backpressure: once `write` returns
 * false, later lines wait in a bounded queue until 'drain', and `onPressure` lets the owner stop
 * reading meanwhile. A peer that stops reading long enough to overflow the queue is cut off
 * rather than allowed to grow our memory without bound.
 */
import type { Socket } from "node:net";

export class JsonLineWriter {
  readonly #socket: Socket;
  readonly #maxQueuedBytes: number;
  readonly #onOverflow: () => void;
  readonly #onPressure: (blocked: boolean) => void;
  #queue: string[] = [];
  #queuedBytes = 0;
  #waitingForDrain = false;
  #ended = false;

  constructor(
    socket: Socket,
    options: { maxQueuedBytes: number; onOverflow: () => void; onPressure?: (blocked: boolean) => void },
  ) {
    this.#socket = socket;
    this.#maxQueuedBytes = options.maxQueuedBytes;
    this.#onOverflow = options.onOverflow;
    this.#onPressure = options.onPressure ?? (() => {});
    socket.on("drain", () => this.#flush());
  }

  /** Queues one pre-serialized line (without its newline); returns false if it was dropped. */
  writeLine(json: string): boolean {
    if (this.#ended || !this.#socket.writable) return false;
    const line = `${json}\n`;
    if (this.#waitingForDrain) {
      this.#queuedBytes += Buffer.byteLength(line);
      if (this.#queuedBytes > this.#maxQueuedBytes) {
        this.#ended = true;
        this.#queue = [];
        this.#onOverflow();
        return false;
      }
      this.#queue.push(line);
      return true;
    }
    this.#waitingForDrain = !this.#socket.write(line);
    if (this.#waitingForDrain) this.#onPressure(true);
    return true;
  }

  /** Serializes and queues one message. */
  write(message: object): boolean {
    return this.writeLine(JSON.stringify(message));
  }

  /** Ends the socket once everything queued has been handed to it. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#waitingForDrain) this.#socket.end();
  }

  #flush(): void {
    this.#waitingForDrain = false;
    while (!this.#waitingForDrain) {
      const line = this.#queue.shift();
      if (line === undefined) break;
      this.#queuedBytes -= Buffer.byteLength(line);
      this.#waitingForDrain = !this.#socket.write(line);
    }
    if (this.#waitingForDrain) return;
    if (this.#ended) this.#socket.end();
    else this.#onPressure(false);
  }
}
