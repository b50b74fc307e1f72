/**
 * A raw JSON-lines client over a Unix socket (a container-side peer as a test drives it), with a
 * bounded wait for the next matching message.
 */
import { connect, type Socket } from "node:net";
import { LineSplitter } from "../../protocol/line-splitter.js";

export type Msg = Record<string, unknown> & {
  id?: unknown;
  error?: { code: number; message: string; data?: unknown };
};

/** A raw JSON-lines client over a Unix socket, with a bounded wait for the next message. */
export class RawClient {
  readonly socket: Socket;
  readonly #inbox: Msg[] = [];
  #waiters: Array<() => void> = [];
  #closed = false;

  protected constructor(socket: Socket) {
    this.socket = socket;
    const splitter = new LineSplitter(16 * 1024 * 1024);
    socket.on("data", (chunk: Buffer) => {
      for (const e of splitter.push(chunk))
        if (e.kind === "line") this.#inbox.push(JSON.parse(e.text) as Msg);
      this.#wake();
    });
    socket.on("close", () => {
      this.#closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  static open(path: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = connect(path, () => resolve(new RawClient(s)));
      s.once("error", reject);
    });
  }

  /** Sends `hello` with these params and resolves with its answer. */
  hello(params: Record<string, unknown>): Promise<Msg> {
    this.request("hello", "hello", params);
    return this.response("hello");
  }

  get closed(): boolean {
    return this.#closed;
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  send(message: unknown): void {
    this.sendRaw(JSON.stringify(message));
  }

  sendRaw(line: string): void {
    this.socket.write(`${line}\n`);
  }

  request(id: number | string, method: string, params?: unknown): void {
    this.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
  }

  /** Resolves with the first message matching `pred` (removing it), within `ms`. */
  async take(pred: (m: Msg) => boolean = () => true, ms = 3000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.#inbox.findIndex(pred);
      if (i >= 0) return this.#inbox.splice(i, 1)[0] as Msg;
      const left = deadline - Date.now();
      if (left <= 0 || this.#closed) throw new Error(`no matching message (closed=${this.#closed})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  response(id: number | string, ms?: number): Promise<Msg> {
    return this.take((m) => m.id === id, ms);
  }

  async waitClosed(ms = 3000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.#closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (!this.#closed) throw new Error("socket did not close");
  }
}
