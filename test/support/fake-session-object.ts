/**
 * The session object's end of a host's session tunnel, played by a WebSocket server in this
 * process: answers `session_hello`, records every other frame, and sends what a test tells it.
 */
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { type WebSocket, WebSocketServer } from "ws";

export interface Frame {
  ws: WebSocket;
  id?: string | number;
  method?: string;
  params?: unknown;
}

/** The session object's end: answers session_hello, records every other frame. */
export class FakeSessionObject {
  readonly frames: Frame[] = [];
  readonly sockets: WebSocket[] = [];
  hellos = 0;
  readonly #http: HttpServer = createHttpServer();
  readonly #wss = new WebSocketServer({ server: this.#http });

  constructor(readonly sessionId: string) {
    this.#wss.on("connection", (ws) => {
      this.sockets.push(ws);
      ws.on("message", (data) => {
        const text = data.toString();
        if (text === "ping") {
          ws.send("pong");
          return;
        }
        const frame = { ws, ...(JSON.parse(text) as Omit<Frame, "ws">) };
        if (frame.method === "session_hello") {
          this.hellos += 1;
          if (this.#heldHellos !== null) this.#heldHellos.push(frame);
          else this.#welcome(frame);
          return;
        }
        this.frames.push(frame);
      });
    });
  }

  #heldHellos: Frame[] | null = null;

  /** Leaves `session_hello` unanswered (the tunnel stays not ready) until `answerHellos`. */
  holdHellos(): void {
    this.#heldHellos ??= [];
  }

  /** Answers the hellos held, and every one after. */
  answerHellos(): void {
    const held = this.#heldHellos ?? [];
    this.#heldHellos = null;
    for (const frame of held) this.#welcome(frame);
  }

  #welcome(frame: Frame): void {
    const config = { caller_id: null, tools: [], timeout_ms: 60_000, backstop_ms: 135_000 };
    this.send(frame.ws, {
      id: frame.id,
      result: { session_id: this.sessionId, stored_event_seq: 0, config },
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#http.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#http.address() as { port: number }).port}`;
  }

  /** The requests of `method` it received. */
  requests(method: string): Frame[] {
    return this.frames.filter((f) => f.method === method);
  }

  approvals(): Frame[] {
    return this.requests("approval");
  }

  send(ws: WebSocket, message: Record<string, unknown>): void {
    ws.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.#wss.close();
    await new Promise((resolve) => this.#http.close(resolve));
  }
}

export async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
