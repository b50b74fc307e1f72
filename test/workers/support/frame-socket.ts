import { exports } from "cloudflare:workers";

/** The origin every test request goes to (the Worker ignores the host name). */
export const BASE = "https://worker.test";

type Waiter<T> = {
  match(frame: T): boolean;
  resolve(frame: T): void;
  reject(err: Error): void;
};

const open = new Set<{ close(): void }>();

/**
 * A client WebSocket to the Worker whose text frames are read by `parse`, which throws on a frame
 * outside the protocol: that fails the test (it is a protocol bug, not noise). `take(match)`
 * waits for the first unread frame that matches; every frame stays in `all`. Heartbeat pongs
 * are skipped.
 */
export class FrameSocket<T> {
  readonly all: T[] = [];
  /** Size in UTF-8 bytes of the largest frame received. */
  largestFrameBytes = 0;
  /** Resolves with the close code when the server closes the socket. */
  readonly closed: Promise<number>;
  readonly #inbox: T[] = [];
  readonly #waiters = new Set<Waiter<T>>();
  readonly #listeners: ((frame: T) => void)[] = [];
  readonly #ws: WebSocket;
  #failure: Error | null = null;

  constructor(ws: WebSocket, parse: (text: string) => T) {
    this.#ws = ws;
    this.closed = new Promise((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
    ws.addEventListener("message", (e) => {
      if (typeof e.data !== "string") return this.#fail(new Error("server sent a binary frame"));
      if (e.data === "pong") return;
      this.largestFrameBytes = Math.max(this.largestFrameBytes, new TextEncoder().encode(e.data).byteLength);
      let frame: T;
      try {
        frame = parse(e.data);
      } catch (err) {
        return this.#fail(
          new Error(`server sent a frame outside the protocol: ${e.data.slice(0, 500)}\n${err}`),
        );
      }
      this.all.push(frame);
      try {
        for (const listener of this.#listeners) listener(frame);
      } catch (err) {
        return this.#fail(err instanceof Error ? err : new Error(String(err)));
      }
      for (const waiter of this.#waiters) {
        if (waiter.match(frame)) {
          this.#waiters.delete(waiter);
          waiter.resolve(frame);
          return;
        }
      }
      this.#inbox.push(frame);
    });
    open.add(this);
  }

  /** Runs for every frame as it arrives (before `take` sees it); a throw fails the socket. */
  onFrame(listener: (frame: T) => void): void {
    this.#listeners.push(listener);
  }

  /** Sends an object as JSON, or a raw string / binary frame as is. */
  send(frame: object | string | Uint8Array): void {
    this.#ws.send(typeof frame === "string" || frame instanceof Uint8Array ? frame : JSON.stringify(frame));
  }

  /** The first unread frame passing `match`, waiting up to `timeoutMs`; `what` names it in failures. */
  take<U extends T>(match: (frame: T) => frame is U, what: string, timeoutMs?: number): Promise<U>;
  take(match: (frame: T) => boolean, what: string, timeoutMs?: number): Promise<T>;
  take(match: (frame: T) => boolean, what: string, timeoutMs = 2000): Promise<T> {
    if (this.#failure) return Promise.reject(this.#failure);
    const index = this.#inbox.findIndex(match);
    const found = this.#inbox[index];
    if (index !== -1 && found !== undefined) {
      this.#inbox.splice(index, 1);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = {
        match,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        const got = JSON.stringify(this.all).slice(0, 2000);
        reject(new Error(`no ${what} within ${timeoutMs} ms; got ${got}`));
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Every frame received so far passing `match`, read or not. */
  seen<U extends T>(match: (frame: T) => frame is U): U[];
  seen(match: (frame: T) => boolean): T[];
  seen(match: (frame: T) => boolean): T[] {
    return this.all.filter(match);
  }

  close(code = 1000): void {
    open.delete(this);
    try {
      this.#ws.close(code, "test done");
    } catch {
      // already closed
    }
  }

  #fail(err: Error): void {
    this.#failure = err;
    for (const waiter of this.#waiters) waiter.reject(err);
    this.#waiters.clear();
  }
}

/**
 * A socket whose frames are JSON objects discriminated by `type` (the plain subscriber socket),
 * checked against a wire schema. `next(type)` waits for the first unread frame of that type.
 */
export class TypedSocket<T extends { type: string }> extends FrameSocket<T> {
  /** Upgrades `path` with a Bearer token; throws with the HTTP answer when the Worker refuses. */
  static async connect<T extends { type: string }>(
    path: string,
    token: string,
    parse: (raw: unknown) => T,
  ): Promise<TypedSocket<T>> {
    return new TypedSocket(await openWebSocket(path, token), (text) => parse(JSON.parse(text)));
  }

  /** The first unread frame of `type` (that passes `where`), waiting up to `timeoutMs`. */
  next<K extends T["type"]>(
    type: K,
    where: (frame: Extract<T, { type: K }>) => boolean = () => true,
    timeoutMs = 2000,
  ): Promise<Extract<T, { type: K }>> {
    const match = (f: T): f is Extract<T, { type: K }> =>
      f.type === type && where(f as Extract<T, { type: K }>);
    return this.take(match, `${type} frame`, timeoutMs);
  }

  /** Every frame of `type` received so far, read or not. */
  received<K extends T["type"]>(type: K): Extract<T, { type: K }>[] {
    return this.seen((f): f is Extract<T, { type: K }> => f.type === type);
  }
}

/** Upgrades `path` with a Bearer token and accepts the socket; throws when the Worker refuses. */
export async function openWebSocket(path: string, token: string): Promise<WebSocket> {
  const res = await upgrade(path, token);
  if (!res.webSocket) throw new Error(`no WebSocket upgrade: ${res.status} ${await res.text()}`);
  res.webSocket.accept();
  return res.webSocket;
}

/** A WebSocket upgrade request through the Worker's own fetch handler. */
export function upgrade(path: string, token: string | null): Promise<Response> {
  const headers: Record<string, string> = { upgrade: "websocket" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return exports.default.fetch(`${BASE}${path}`, { headers });
}

/** Closes every socket the test opened. */
export function closeAllSockets(): void {
  for (const socket of [...open]) socket.close();
}
