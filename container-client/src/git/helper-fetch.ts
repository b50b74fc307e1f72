/**
 * `git fetch` through the host, for git-remote-oubliette: the host fetches the branches into the
 * project's repository and bundles them; the bundle comes over the session's socket in chunks,
 * into a file in the repository, and `git bundle unbundle` takes its objects. git itself then
 * updates the refs from the listing it asked for.
 */
import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { SocketMethods } from "../../../protocol/socket.js";

const FETCH_TIMEOUT_MS = 15 * 60_000;
const READ_TIMEOUT_MS = 60_000;
/** Most bytes of bundle taken (the workspace's disk bound applies too). */
const MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024;

/** The branches to ask for: the named refs under refs/heads/, `HEAD` as the branch it names. */
export function fetchBranches(names: string[], head: string | null): string[] {
  const branches = new Set<string>();
  for (const name of names) {
    if (name.startsWith("refs/heads/")) branches.add(name.slice("refs/heads/".length));
    else if (name === "HEAD" && head !== null) branches.add(head);
  }
  return [...branches];
}

export async function fetchThroughHost(peer: RpcPeer, url: string, gitDir: string, branches: string[]) {
  if (branches.length === 0) return;
  const fetched = await peer.request(
    SocketMethods.gitFetch,
    { url, branches },
    { timeoutMs: FETCH_TIMEOUT_MS, timeoutMessage: "the host did not finish the fetch in time" },
  );
  if (fetched.bytes > MAX_BUNDLE_BYTES)
    throw new Error(`the fetched bundle is over ${MAX_BUNDLE_BYTES} bytes`);
  const file = join(gitDir, `oubliette-fetch-${process.pid}.bundle`);
  try {
    const out = createWriteStream(file, { mode: 0o600 });
    let offset = 0;
    for (;;) {
      const chunk = await peer.request(
        SocketMethods.gitFetchRead,
        { bundle_id: fetched.bundle_id, offset },
        { timeoutMs: READ_TIMEOUT_MS },
      );
      const bytes = Buffer.from(chunk.data, "base64");
      out.write(bytes);
      offset += bytes.length;
      if (chunk.eof || bytes.length === 0) break;
    }
    await new Promise<void>((done, fail) => out.end((err?: Error | null) => (err ? fail(err) : done())));
    await unbundle(file);
  } finally {
    await rm(file, { force: true });
  }
}

function unbundle(file: string): Promise<void> {
  return new Promise((done, fail) =>
    execFile("git", ["bundle", "unbundle", file], { timeout: FETCH_TIMEOUT_MS }, (error, _out, stderr) =>
      error ? fail(new Error(`git bundle unbundle: ${String(stderr).trim() || error.message}`)) : done(),
    ),
  );
}
