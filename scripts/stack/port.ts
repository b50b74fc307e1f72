/**
 * Loopback ports for the Worker: whether one is free, and a free one. Checked before wrangler
 * starts, so that a port another server (maybe another stack) already serves is refused up front
 * instead of being mistaken for this stack's Worker.
 */
import { createServer } from "node:net";

/** The port asked for is served by someone else. */
export class PortInUseError extends Error {
  readonly code = "port_in_use";
  constructor(readonly port: number) {
    super(`port ${port} is already in use`);
    this.name = "PortInUseError";
  }
}

/** Whether nothing listens on 127.0.0.1:`port` right now (a listener on 0.0.0.0 counts). */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE" || err.code === "EACCES") resolve(false);
      else reject(err);
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port nobody listens on right now. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("could not pick a free port");
  return address.port;
}
