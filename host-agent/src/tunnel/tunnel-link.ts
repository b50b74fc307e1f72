/**
 * A tunnel WebSocket that stays connected, with a fresh JSON-RPC conversation on every
 * connection: each (re)connect gets a new RpcPeer (so nothing of a dead connection answers on a
 * live one), and its owner re-sends its durable state from `opened`.
 */
import type { Logger } from "../../../lib/log.js";
import { RpcPeer } from "../../../lib/rpc/peer.js";
import { Limits } from "../../../protocol/limits.js";
import { ReconnectingSocket, type TunnelTiming } from "./reconnecting-socket.js";

export interface TunnelLinkOptions {
  url: string;
  hostToken: string;
  logger: Logger;
  timing?: TunnelTiming;
  /** Registers the methods this side serves on a fresh peer. */
  serve(peer: RpcPeer): void;
  /** Runs once per connection, after it opened: say hello, re-send what is pending. */
  opened(peer: RpcPeer): void;
  /** The connection (and its peer) is gone. */
  closed?(): void;
  /** The Worker refused the tunnel for good (bad token, unknown session). */
  onPermanentFailure(status: number, body: string): void;
}

export class TunnelLink {
  readonly #socket: ReconnectingSocket;
  #peer: RpcPeer | null = null;

  constructor(options: TunnelLinkOptions) {
    this.#socket = new ReconnectingSocket({
      url: options.url,
      headers: () => ({ authorization: `Bearer ${options.hostToken}` }),
      logger: options.logger,
      timing: options.timing,
      onOpen: () => {
        const peer = new RpcPeer({
          send: (text) => this.#socket.send(text),
          maxMessageBytes: Limits.frameBytes,
          logger: options.logger,
        });
        this.#peer = peer;
        options.serve(peer);
        options.opened(peer);
      },
      onFrame: (text) => this.#peer?.receive(text),
      onClose: () => {
        this.#peer?.close("the tunnel closed");
        this.#peer = null;
        options.closed?.();
      },
      onPermanentFailure: options.onPermanentFailure,
    });
  }

  /** The conversation of the current connection, or null while disconnected. */
  get peer(): RpcPeer | null {
    return this.#peer;
  }

  get connected(): boolean {
    return this.#socket.connected;
  }

  start(): void {
    this.#socket.start();
  }

  /** Reconnects at once if waiting to retry. */
  retryNow(): void {
    this.#socket.retryNow();
  }

  /** Drops the current connection; it reconnects with a fresh conversation. */
  drop(): void {
    this.#socket.drop();
  }

  close(): void {
    this.#socket.close();
  }
}
