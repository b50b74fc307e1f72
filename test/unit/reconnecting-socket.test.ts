/**
 * The host's outbound tunnel socket (host-agent/src/tunnel/reconnecting-socket.ts) against a real
 * WebSocket server on loopback: it offers no compression (the tunnel's small messages would each
 * pay zlib on both ends), passes text frames on (heartbeat pongs are its own), and
 * reconnects when the server drops it.
 */
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ReconnectingSocket } from "../../host-agent/src/tunnel/reconnecting-socket.js";
import { createLogger } from "../../lib/log.js";
import { HEARTBEAT_PONG } from "../../protocol/tunnel.js";

const logger = createLogger({ name: "reconnecting-socket-test", level: "silent" });

let server: WebSocketServer | undefined;
let socket: ReconnectingSocket | undefined;
afterEach(async () => {
  socket?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  socket = undefined;
});

/** A server that would compress if asked, and records each upgrade request. */
async function compressingServer(): Promise<{ url: string; upgrades: IncomingMessage[] }> {
  const upgrades: IncomingMessage[] = [];
  server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: { threshold: 0 } });
  server.on("connection", (ws, request) => {
    upgrades.push(request);
    ws.send(HEARTBEAT_PONG);
    ws.send(`hello ${upgrades.length}`);
  });
  await new Promise<void>((resolve) => server?.once("listening", () => resolve()));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/tunnel`, upgrades };
}

function open(url: string, frames: string[], opened: () => void): ReconnectingSocket {
  return new ReconnectingSocket({
    url,
    headers: () => ({ authorization: "Bearer test" }),
    logger,
    onOpen: opened,
    onFrame: (text) => frames.push(text),
    onClose: () => {},
    onPermanentFailure: () => {},
    timing: { heartbeatMs: 60_000, maxReconnectDelayMs: 50 },
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the tunnel's reconnecting socket", () => {
  it("offers no per-message compression, even to a server that would compress", async () => {
    const { url, upgrades } = await compressingServer();
    const frames: string[] = [];
    let opens = 0;
    socket = open(url, frames, () => {
      opens += 1;
    });
    socket.start();
    await until(() => frames.length === 1, "the first frame");
    expect(upgrades[0]?.headers["sec-websocket-extensions"]).toBeUndefined();
    expect(frames).toEqual(["hello 1"]);
    expect(opens).toBe(1);
  });

  it("connects again when the server drops the connection, still without compression", async () => {
    const { url, upgrades } = await compressingServer();
    const frames: string[] = [];
    socket = open(url, frames, () => {});
    socket.start();
    await until(() => frames.length === 1, "the first frame");
    for (const client of server?.clients ?? []) client.terminate();
    await until(() => frames.length === 2, "a frame on the second connection");
    expect(frames).toEqual(["hello 1", "hello 2"]);
    expect(upgrades.map((u) => u.headers["sec-websocket-extensions"])).toEqual([undefined, undefined]);
  });
});
