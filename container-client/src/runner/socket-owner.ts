/**
 * Which uid made a loopback TCP connection, as the kernel says: the socket tables in
 * /proc/net/tcp and /proc/net/tcp6 list each socket with its owner's uid. The runner accepts a
 * proxy connection and looks up the client's end (local port = the client's, remote port = the
 * proxy's) to learn whose it is — no credential an agent could copy decides that.
 */
import { readFile } from "node:fs/promises";

const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"];
/** TCP_ESTABLISHED in the kernel's state column. */
const ESTABLISHED = "01";

/** One row of a socket table that matters here. */
export interface SocketRow {
  localPort: number;
  remotePort: number;
  state: string;
  uid: number;
}

/** Parses a /proc/net/tcp(6) table (header line first); rows it cannot read are skipped. */
export function parseSocketTable(text: string): SocketRow[] {
  const rows: SocketRow[] = [];
  for (const line of text.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
    if (fields.length < 10) continue;
    const local = fields[1]?.split(":")[1];
    const remote = fields[2]?.split(":")[1];
    const uid = Number(fields[7]);
    if (local === undefined || remote === undefined || !Number.isInteger(uid)) continue;
    rows.push({
      localPort: Number.parseInt(local, 16),
      remotePort: Number.parseInt(remote, 16),
      state: fields[3] ?? "",
      uid,
    });
  }
  return rows;
}

/** The uid owning the client end of a connection from `clientPort` to `serverPort`, or null when not found. */
export function ownerIn(rows: readonly SocketRow[], clientPort: number, serverPort: number): number | null {
  const row = rows.find(
    (r) => r.localPort === clientPort && r.remotePort === serverPort && r.state === ESTABLISHED,
  );
  return row?.uid ?? null;
}

/** Reads the kernel's tables and finds the owner of the client end; null when it is not there. */
export async function socketOwner(clientPort: number, serverPort: number): Promise<number | null> {
  for (const table of TABLES) {
    const text = await readFile(table, "utf8").catch(() => "");
    const uid = ownerIn(parseSocketTable(text), clientPort, serverPort);
    if (uid !== null) return uid;
  }
  return null;
}
