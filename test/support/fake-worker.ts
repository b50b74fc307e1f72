/**
 * The Worker's side of session tunnels, as small as the host-agent needs it to run sessions in
 * tests: a real WebSocket server on 127.0.0.1 (port 0) speaking the tunnel's JSON-RPC. It answers
 * `session_hello`, stores `session_events` (by seq), records `session_end` and `git_pushed`, and lets a test send
 * `droid_message`s to a session's agent.
 */
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { Logger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { Limits } from "../../protocol/limits.js";
import { droidMessageId, HEARTBEAT_PING, HEARTBEAT_PONG, TunnelMethods } from "../../protocol/tunnel.js";
import type { GitPush } from "../../protocol/tunnel-git.js";

interface SessionState {
  events: AgentEvent[];
  storedSeq: number;
  ended: string | null;
  peer: RpcPeer | null;
  gitPushes: GitPush[];
  pushIds: Set<string>;
}

export class FakeWorker {
  readonly #server: WebSocketServer;
  readonly #sessions = new Map<string, SessionState>();
  readonly #logger: Logger;

  private constructor(server: WebSocketServer, logger: Logger) {
    this.#server = server;
    this.#logger = logger;
    server.on("connection", (ws, request) => {
      const match = /^\/v1\/tunnel\/sessions\/([^/?]+)/.exec(request.url ?? "");
      if (!match?.[1]) {
        ws.close(4004, "only session tunnels here");
        return;
      }
      this.#serve(ws, decodeURIComponent(match[1]));
    });
  }

  static async start(logger: Logger): Promise<FakeWorker> {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    return new FakeWorker(server, logger);
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  #state(sessionId: string): SessionState {
    let state = this.#sessions.get(sessionId);
    if (!state) {
      state = { events: [], storedSeq: 0, ended: null, peer: null, gitPushes: [], pushIds: new Set() };
      this.#sessions.set(sessionId, state);
    }
    return state;
  }

  events(sessionId: string): AgentEvent[] {
    return this.#state(sessionId).events;
  }

  /** `data` of the session's droid_output events. */
  outputs(sessionId: string): Record<string, unknown>[] {
    return this.events(sessionId).flatMap((e) =>
      e.type === "droid_output" && e.data ? [e.data as Record<string, unknown>] : [],
    );
  }

  /** The `git_pushed` notifications of the session (its agent's own pushes). */
  gitPushes(sessionId: string): GitPush[] {
    return this.#state(sessionId).gitPushes;
  }

  ended(sessionId: string): string | null {
    return this.#state(sessionId).ended;
  }

  connected(sessionId: string): boolean {
    return this.#state(sessionId).peer !== null;
  }

  /** Sends droid message `seq`; resolves once the host says the runner wrote it. */
  async message(sessionId: string, seq: number, text: string): Promise<void> {
    const peer = this.#state(sessionId).peer;
    if (!peer) throw new Error(`session ${sessionId} has no tunnel`);
    await peer.request(
      TunnelMethods.droidMessage,
      { seq, text },
      { id: droidMessageId(seq), timeoutMs: 30_000 },
    );
  }

  async close(): Promise<void> {
    for (const ws of this.#server.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #serve(ws: WebSocket, sessionId: string): void {
    const state = this.#state(sessionId);
    const peer = new RpcPeer({
      send: (text) => {
        if (ws.readyState !== ws.OPEN) return false;
        ws.send(text);
        return true;
      },
      maxMessageBytes: Limits.frameBytes,
      logger: this.#logger,
    });
    peer.handle(TunnelMethods.sessionHello, () => {
      state.peer = peer;
      return {
        session_id: sessionId,
        stored_event_seq: state.storedSeq,
        config: { caller_id: "ant", tools: [], timeout_ms: 60_000, backstop_ms: 135_000 },
      };
    });
    peer.handle(TunnelMethods.sessionEvents, (params) => {
      for (const event of params.events) {
        if (event.seq > state.storedSeq) {
          state.events.push(event);
          state.storedSeq = event.seq;
        }
      }
      return { stored_seq: state.storedSeq };
    });
    peer.handle(TunnelMethods.sessionEnd, (params) => {
      state.ended = params.reason;
      return {};
    });
    peer.handle(TunnelMethods.gitPushed, ({ push_id, ...push }) => {
      // Told once per id, as the session object does, however often the host sends it.
      if (!state.pushIds.has(push_id)) state.gitPushes.push(push);
      state.pushIds.add(push_id);
      return {};
    });
    ws.on("message", (data) => {
      const text = String(data);
      if (text === HEARTBEAT_PING) ws.send(HEARTBEAT_PONG);
      else peer.receive(text);
    });
    ws.on("close", () => {
      peer.close("the tunnel closed");
      if (state.peer === peer) state.peer = null;
    });
  }
}
