/**
 * Reads that go straight on to another socket, in big pieces: a socket made with these `onread`
 * options reads up to 256 KiB per system call into one buffer this process shares (Node's own
 * reads are 64 KiB, each into a buffer of its own), copies each piece out and writes it to the
 * target, pausing while the target is full. Twice the throughput of `pipe()` for a download
 * through the egress gate's two hops, with bounded memory: at most one piece in flight per socket.
 * The shared buffer is safe because each read's bytes are copied out in the callback, and the next
 * read (on this thread) comes only after it returns.
 */
import type { OnReadOpts, Socket } from "node:net";

const PIECE = 256 * 1024;
const SHARED = Buffer.allocUnsafe(PIECE);

/** Where a relayed socket's reads go: `to`; `from` is the socket itself, once made (to resume it). */
export interface RelayTarget {
  to: Socket;
  from: Socket | null;
}

/** `onread` options that write what is read to `target.to` (ending it when the reads end: see relayEnd). */
export function relayOnRead(target: RelayTarget): OnReadOpts {
  return {
    buffer: SHARED,
    callback: (bytes, buffer) => {
      const { to, from } = target;
      if (to.destroyed) return false;
      if (to.write(Buffer.from(buffer.subarray(0, bytes)))) return true;
      to.once("drain", () => from?.resume());
      return false;
    },
  };
}

/** Ends the target once the relayed socket's reads end (onread sockets emit no data, but do end). */
export function relayEnd(from: Socket, to: Socket): void {
  from.once("end", () => to.end());
}
