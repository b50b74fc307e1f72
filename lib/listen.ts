/**
 * Starting a server, the two ways this product does: on a Unix socket in a directory whose mode
 * decides who may connect (the container sockets, the model proxy, the egress gate), and on a free
 * port of loopback (the runner's model forwarder and egress proxy inside a container).
 */
import { chmod, rm } from "node:fs/promises";
import type { Server } from "node:net";
import { withSocketPath } from "./unix-path.js";

/** Listens once on `target` (a path, or a port and host); rejects with the listen error. */
function listen(server: Server, ...target: [string] | [number, string]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(...(target as [number, string]), () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * Listens on the Unix socket `path` (a stale socket file there is replaced; a long path is
 * reached through its directory), mode 0666: its directory decides who may connect.
 */
export async function listenOnSocket(server: Server, path: string): Promise<void> {
  await rm(path, { force: true });
  await withSocketPath(path, (usable) => listen(server, usable));
  await chmod(path, 0o666);
}

/** Listens on a free port of 127.0.0.1; resolves with the port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await listen(server, 0, "127.0.0.1");
  const address = server.address();
  return typeof address === "object" && address !== null ? address.port : 0;
}
