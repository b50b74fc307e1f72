/**
 * Which uid made a loopback TCP connection, as the kernel says: the socket tables in
 * /proc/net/tcp and /proc/net/tcp6 list each socket with its owner's uid. The runner accepts a
 * proxy connection and looks up the client's end (local port = the client's, remote port = the
 * proxy's) to learn whose it is — no credential an agent could copy decides that.
 *
 * The kernel writes the table as it is read, walking its whole connection hash: the table is read
 * in pieces and the reading stops at the row sought. (A container's network namespace with a hash
 * of its own, which the host-agent arranges where it can, keeps that walk short.)
 */
import { closeSync, openSync, readSync } from "node:fs";

const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"];
/** TCP_ESTABLISHED in the kernel's state column. */
const ESTABLISHED = "01";
/** How much of a table one read takes. */
const PIECE = 64 * 1024;

/** One row of a socket table that matters here. */
export interface SocketRow {
  localPort: number;
  remotePort: number;
  state: string;
  uid: number;
}

/** Parses one row of a /proc/net/tcp(6) table; null for the header or a line it cannot read. */
export function parseSocketRow(line: string): SocketRow | null {
  const fields = line.trim().split(/\s+/);
  // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
  if (fields.length < 10 || !/^\d+:$/.test(fields[0] ?? "")) return null;
  const local = fields[1]?.split(":")[1];
  const remote = fields[2]?.split(":")[1];
  const uid = Number(fields[7]);
  if (local === undefined || remote === undefined || !Number.isInteger(uid)) return null;
  return {
    localPort: Number.parseInt(local, 16),
    remotePort: Number.parseInt(remote, 16),
    state: fields[3] ?? "",
    uid,
  };
}

/** Parses a whole table (header line first); rows it cannot read are skipped. */
export function parseSocketTable(text: string): SocketRow[] {
  return text.split("\n").flatMap((line) => parseSocketRow(line) ?? []);
}

/** Whether `row` is the client end of a connection from `clientPort` to `serverPort`. */
function isClientEnd(row: SocketRow, clientPort: number, serverPort: number): boolean {
  return row.localPort === clientPort && row.remotePort === serverPort && row.state === ESTABLISHED;
}

/** The uid owning the client end of a connection from `clientPort` to `serverPort`, or null when not found. */
export function ownerIn(rows: readonly SocketRow[], clientPort: number, serverPort: number): number | null {
  return rows.find((r) => isClientEnd(r, clientPort, serverPort))?.uid ?? null;
}

/**
 * Reads the kernel's tables (in pieces, stopping at the row) and finds the owner of the client
 * end. Synchronous: a read of a container's table is a fraction of a millisecond, less than the
 * round trips through the thread pool an asynchronous read would take.
 */
export function socketOwner(clientPort: number, serverPort: number): number | null {
  for (const table of TABLES) {
    let uid: number | null = null;
    try {
      uid = findIn(table, clientPort, serverPort);
    } catch {
      uid = null;
    }
    if (uid !== null) return uid;
  }
  return null;
}

function findIn(table: string, clientPort: number, serverPort: number): number | null {
  const fd = openSync(table, "r");
  try {
    const buffer = Buffer.allocUnsafe(PIECE);
    let rest = "";
    for (;;) {
      const bytesRead = readSync(fd, buffer, 0, PIECE, null);
      if (bytesRead === 0) return null;
      const lines = (rest + buffer.toString("latin1", 0, bytesRead)).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        const row = parseSocketRow(line);
        if (row !== null && isClientEnd(row, clientPort, serverPort)) return row.uid;
      }
    }
  } finally {
    closeSync(fd);
  }
}
