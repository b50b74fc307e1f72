/**
 * `git-remote-oubliette`: a git remote helper (gitremote-helpers(7)) for the project's remote.
 * The container has no network; the session's git environment rewrites the project's remote to
 * `oubliette::<url>` (protocol/container-layout.ts), so `git push` and `git ls-remote` there run
 * this, which asks the host-agent over the session's socket. The host pushes from the project's
 * own repository with its credential, which never enters the container (docs/git.md).
 *
 * Capabilities: `list`, `push` (no force pushes, no deletions) and `fetch` (helper-fetch.ts).
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import type { Logger } from "../../../lib/log.js";
import { LineConnection } from "../../../lib/rpc/line-connection.js";
import type { RpcPeer } from "../../../lib/rpc/peer.js";
import { Limits } from "../../../protocol/limits.js";
import { AgentEnv, SocketMethods } from "../../../protocol/socket.js";
import { openSocket } from "../socket/socket-session.js";
import { fetchBranches, fetchThroughHost } from "./helper-fetch.js";

/** A push of the whole bundle and the host's push: minutes for a large repository. */
const PUSH_TIMEOUT_MS = 15 * 60_000;
const LIST_TIMEOUT_MS = 2 * 60_000;

export interface RemoteHelperIo {
  lines: AsyncIterable<string>;
  write(text: string): void;
}

/** One parsed `push` line: `[+]<src>:<dst>`. */
export interface PushSpec {
  force: boolean;
  src: string;
  dst: string;
}

export function parsePushSpec(spec: string): PushSpec {
  const force = spec.startsWith("+");
  const body = force ? spec.slice(1) : spec;
  const colon = body.indexOf(":");
  return colon < 0
    ? { force, src: body, dst: body }
    : { force, src: body.slice(0, colon), dst: body.slice(colon + 1) };
}

/** git in the repository being pushed (git gives the helper GIT_DIR). */
function localGit(args: string[]): Promise<string> {
  return new Promise((done, fail) =>
    execFile("git", args, { encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) =>
      error ? fail(new Error(stderr.trim() || error.message)) : done(stdout.trim()),
    ),
  );
}

/**
 * The branch to bundle for `src`: its own when it names a branch (`HEAD` on one, `feature`);
 * otherwise (a commit, a tag, a detached HEAD) a temporary branch at its commit, removed after.
 */
async function sourceBranch(src: string): Promise<{ branch: string; temporary: boolean }> {
  if (src.startsWith("-")) throw new Error(`${src} is not a ref`);
  // (rev-parse echoes --end-of-options back; a name that could be an option is refused above.)
  const full = await localGit(["rev-parse", "--symbolic-full-name", src]).catch(() => "");
  if (full.startsWith("refs/heads/")) return { branch: full.slice("refs/heads/".length), temporary: false };
  const commit = await localGit(["rev-parse", "--verify", "--quiet", "--end-of-options", `${src}^{commit}`]);
  const branch = `oubliette-push/${process.pid}-${Date.now()}`;
  await localGit(["update-ref", `refs/heads/${branch}`, commit]);
  return { branch, temporary: true };
}

/** Answers one push: `ok <dst>` or `error <dst> <why>`. */
async function push(peer: RpcPeer, url: string, gitDir: string, spec: PushSpec): Promise<string> {
  const fail = (why: string) => `error ${spec.dst} ${why.replace(/\s+/g, " ")}`;
  if (spec.src === "") return fail("deleting a branch is not allowed through oubliette");
  if (spec.force) return fail("force pushes are not allowed through oubliette");
  if (!spec.dst.startsWith("refs/heads/")) return fail("only branches can be pushed through oubliette");
  let source: { branch: string; temporary: boolean } | null = null;
  try {
    source = await sourceBranch(spec.src);
    await peer.request(
      SocketMethods.gitPush,
      { url, git_dir: gitDir, src: source.branch, dst: spec.dst.slice("refs/heads/".length) },
      { timeoutMs: PUSH_TIMEOUT_MS, timeoutMessage: "the host did not finish the push in time" },
    );
    return `ok ${spec.dst}`;
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  } finally {
    if (source?.temporary)
      await localGit(["update-ref", "-d", `refs/heads/${source.branch}`]).catch(() => {});
  }
}

/** Serves git's commands on `io` until it closes. */
export async function serveRemoteHelper(peer: RpcPeer, url: string, gitDir: string, io: RemoteHelperIo) {
  let batch: PushSpec[] = [];
  let fetches: string[] = [];
  let head: string | null = null;
  for await (const line of io.lines) {
    if (line === "capabilities") io.write("fetch\npush\nlist\n\n");
    else if (line.startsWith("option ")) io.write("unsupported\n");
    else if (line === "list" || line === "list for-push") {
      const listed = await peer.request(SocketMethods.gitList, { url }, { timeoutMs: LIST_TIMEOUT_MS });
      const refs = listed.refs.map((ref) => `${ref.oid} ${ref.name}\n`).join("");
      head = listed.head;
      const symref = head !== null ? `@refs/heads/${head} HEAD\n` : "";
      io.write(`${refs}${symref}\n`);
    } else if (line.startsWith("push ")) batch.push(parsePushSpec(line.slice(5)));
    else if (line.startsWith("fetch ")) fetches.push(line.split(" ")[2] ?? "");
    else if (line === "" && fetches.length > 0) {
      await fetchThroughHost(peer, url, gitDir, fetchBranches(fetches, head));
      fetches = [];
      io.write("\n");
    } else if (line === "" && batch.length > 0) {
      const answers: string[] = [];
      for (const spec of batch) answers.push(await push(peer, url, gitDir, spec));
      batch = [];
      io.write(`${answers.join("\n")}\n\n`);
    } else if (line === "") return;
    else throw new Error(`git-remote-oubliette: unknown command ${JSON.stringify(line.slice(0, 80))}`);
  }
}

/** The program: `git-remote-oubliette <remote> <url>`, run by git. */
export async function runRemoteHelper(args: string[], log: Logger): Promise<number> {
  const url = args[1] ?? args[0];
  const socketPath = process.env[AgentEnv.socketPath];
  const token = process.env[AgentEnv.sessionToken];
  if (url === undefined || socketPath === undefined || token === undefined) {
    process.stderr.write(
      "git-remote-oubliette: run by git, in an Oubliette session (no session socket here)\n",
    );
    return 128;
  }
  const gitDir = resolve(process.env.GIT_DIR ?? ".git");
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  // Iterated from now on: git writes its first command while we connect, and readline keeps
  // lines only for an iterator that already exists.
  const iterator = lines[Symbol.asyncIterator]();
  let connection: LineConnection | null = null;
  try {
    connection = new LineConnection(await openSocket(socketPath, 5_000), {
      maxLineBytes: Limits.lineBytes,
      logger: log,
    });
    await connection.peer.request(SocketMethods.hello, {
      session_token: token,
      client: { name: "git-remote-oubliette", version: "1" },
    });
    await serveRemoteHelper(connection.peer, url, gitDir, {
      lines: { [Symbol.asyncIterator]: () => iterator },
      write: (text) => process.stdout.write(text),
    });
    return 0;
  } catch (error) {
    process.stderr.write(`git-remote-oubliette: ${error instanceof Error ? error.message : String(error)}\n`);
    return 128;
  } finally {
    connection?.destroy();
    // git may still hold our stdin open: stop reading it, or the process would never end.
    lines.close();
    process.stdin.destroy();
  }
}
