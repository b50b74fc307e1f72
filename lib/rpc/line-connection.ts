/**
 * A JSON-RPC peer over a stream socket, one message per line: the container socket's transport
 * on both ends. Lines over the cap are refused with an error (id null) and dropped, so one bad
 * line never costs the connection; writes honour backpressure with a bounded queue.
 */
import type { Socket } from "node:net";
import { LineSplitter } from "../../protocol/line-splitter.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { JsonLineWriter } from "../json-line-writer.js";
import type { Logger } from "../log.js";
import { RpcPeer, type RpcPeerOptions } from "./peer.js";

export interface LineConnectionOptions extends Omit<RpcPeerOptions, "send" | "maxMessageBytes"> {
  maxLineBytes: number;
  logger: Logger;
  /**
   * Pause reading while the peer does not read our writes. Only ONE end of a connection may do
   * this: if both did, two full buffers would wait on each other forever.
   */
  pauseOnPressure?: boolean;
}

export class LineConnection {
  readonly peer: RpcPeer;
  /** Settles once, when the socket has closed. */
  readonly closed: Promise<void>;
  readonly #socket: Socket;
  readonly #writer: JsonLineWriter;

  constructor(socket: Socket, options: LineConnectionOptions) {
    this.#socket = socket;
    const writer = new JsonLineWriter(socket, {
      maxQueuedBytes: Math.max(64 * 1024 * 1024, options.maxLineBytes * 16),
      onOverflow: () => {
        options.logger.warn("peer stopped reading (write queue overflow); dropping the connection");
        socket.destroy();
      },
      onPressure: options.pauseOnPressure
        ? (blocked) => (blocked ? socket.pause() : socket.resume())
        : undefined,
    });
    this.#writer = writer;
    this.peer = new RpcPeer({
      ...options,
      maxMessageBytes: options.maxLineBytes,
      send: (text) => writer.writeLine(text),
    });
    const splitter = new LineSplitter(options.maxLineBytes);
    const onLines = (events: ReturnType<LineSplitter["push"]>) => {
      for (const event of events) {
        if (event.kind === "line") this.peer.receive(event.text);
        else
          this.peer.refuse(
            new RpcError(
              RpcErrorCode.InvalidRequest,
              `invalid request: line of ${event.bytes} bytes exceeds the ${options.maxLineBytes} byte limit`,
            ),
          );
      }
    };
    socket.on("data", (chunk: Buffer) => onLines(splitter.push(chunk)));
    socket.on("end", () => onLines(splitter.end()));
    socket.on("error", (err) => options.logger.debug({ err: err.message }, "socket error"));
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.once("close", () => this.peer.close());
  }

  get isOpen(): boolean {
    return !this.#socket.destroyed && !this.peer.isClosed;
  }

  /** Ends the socket once every queued line has been handed to it. */
  end(): void {
    this.#writer.end();
  }

  destroy(): void {
    this.#socket.destroy();
  }
}
