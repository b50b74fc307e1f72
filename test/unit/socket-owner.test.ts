/**
 * How the runner learns who made a proxy connection: the kernel's socket table names the uid of
 * each socket; the client's end of a connection to the proxy is the row whose local port is the
 * client's and remote port the proxy's, in the ESTABLISHED state.
 */
import { describe, expect, it } from "vitest";
import { ownerIn, parseSocketTable } from "../../container-client/src/runner/socket-owner.js";

// A /proc/net/tcp of a container: the proxy listens on 127.0.0.1:40123 (0x9CBB); uid 30001's
// client (port 0xC350 = 50000) is connected to it; uid 30002 is connected elsewhere from 50001.
const TABLE = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9CBB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:C350 0100007F:9CBB 01 00000000:00000000 00:00000000 00000000 30001        0 1002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:9CBB 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:C351 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 30002        0 1004 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:C352 0100007F:9CBB 06 00000000:00000000 03:00000000 00000000 30003        0 0 3 0000000000000000
garbage line
`;

describe("the kernel's socket table", () => {
  it("names the uid of the client's end of a connection to the proxy", () => {
    const rows = parseSocketTable(TABLE);
    expect(ownerIn(rows, 50000, 40123)).toBe(30001);
  });

  it("does not take the proxy's own end, another connection, or one no longer established", () => {
    const rows = parseSocketTable(TABLE);
    expect(ownerIn(rows, 50001, 40123)).toBeNull();
    expect(ownerIn(rows, 50002, 40123)).toBeNull();
    expect(ownerIn(rows, 40123, 50000)).toBe(0);
  });

  it("skips lines it cannot read", () => {
    expect(parseSocketTable("header\nnot a row\n")).toEqual([]);
  });
});

describe("the real table", () => {
  it("names this process's uid for its own loopback connection", async () => {
    const { createServer, connect } = await import("node:net");
    const { socketOwner } = await import("../../container-client/src/runner/socket-owner.js");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const serverPort = (server.address() as { port: number }).port;
    const client = connect(serverPort, "127.0.0.1");
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));
    try {
      expect(socketOwner(client.localPort ?? 0, serverPort)).toBe(process.getuid?.());
      expect(socketOwner(1, serverPort)).toBeNull();
    } finally {
      client.destroy();
      server.close();
    }
  });
});
