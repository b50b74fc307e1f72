/**
 * The host id `npm start` gives its host-agent. A host-agent removes the containers its host id
 * left behind when it starts, so two stacks on one Docker Engine must never share one; and a
 * restarted stack should keep its id, so that its host-agent finds its own containers again.
 */
import { isAbsolute, resolve } from "node:path";
import { sha256Hex } from "./tokens.js";

/**
 * `local-` and the first 10 hex digits of the SHA-256 of `stateDir` (absolute): the same for
 * every start from one state directory (by default, one per checkout), different between them.
 */
export function localHostId(stateDir: string): string {
  if (!isAbsolute(stateDir)) throw new Error(`the state directory must be an absolute path: ${stateDir}`);
  // resolve() normalizes "a/b/", "a//b" and "a/./b" to one spelling without reading the disk.
  return `local-${sha256Hex(resolve(stateDir)).slice(0, 10)}`;
}
