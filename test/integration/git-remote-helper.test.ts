/**
 * `git-remote-oubliette` driven by real git: the session's git environment (sessionGitEnv)
 * rewrites the project's remote to `oubliette::<url>`, git runs the helper (a shim on PATH, as the
 * image installs it), and the helper asks a socket peer that stands in for the host-agent. What
 * the host does with a push is tested with Docker (test/docker/git-workspaces.test.ts); here the
 * helper's side of the protocol: hello with the session's secret, `git_list` for the refs,
 * `git_push` per ref, and the answers git shows.
 */
import { execFile, execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePushSpec } from "../../container-client/src/git/remote-helper.js";
import { sameRemote } from "../../host-agent/src/git/agent-git.js";
import { createLogger } from "../../lib/log.js";
import { LineConnection } from "../../lib/rpc/line-connection.js";
import { sessionGitEnv } from "../../protocol/container-layout.js";
import { Limits } from "../../protocol/limits.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { SocketMethods } from "../../protocol/socket.js";

/** git with the session's environment; rejects with its stderr. */
function gitAsync(args: string[], options: { env: NodeJS.ProcessEnv }): Promise<{ stdout: string }> {
  return new Promise((done, fail) =>
    execFile("git", args, { env: options.env, encoding: "utf8", timeout: 20_000 }, (error, stdout, stderr) =>
      error ? fail(Object.assign(error, { stderr })) : done({ stdout }),
    ),
  );
}

const logger = createLogger({ name: "helper-test", level: "silent", fd: 2 });
const REMOTE = "https://git.example.test/acme/app.git";
const TOKEN = "session-secret-1234";

interface Seen {
  hellos: string[];
  pushes: { url: string; git_dir: string; src: string; dst: string }[];
  lists: number;
  fetches: string[][];
}

let dir: string;
let server: Server;
let socketPath: string;
let repo: string;
let env: NodeJS.ProcessEnv;
const seen: Seen = { hellos: [], pushes: [], lists: 0, fetches: [] };
const bundles = new Map<string, Buffer>();
/** The project's remote as the fake host sees it. */
let upstream: string;
/** What the fake host answers to a push of `dst` (null: it takes it). */
const refusals = new Map<string, string>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "oubliette-helper-"));
  socketPath = join(dir, "session.sock");
  server = createServer((socket) => {
    const connection = new LineConnection(socket, { maxLineBytes: Limits.lineBytes, logger });
    const peer = connection.peer;
    peer.handle(SocketMethods.hello, (params) => {
      if (params.session_token !== TOKEN) throw new RpcError(RpcErrorCode.Unauthenticated, "bad secret");
      seen.hellos.push(params.client?.name ?? "");
      return { session_id: "ses_000000000000000000000001", protocol_version: 4 };
    });
    peer.handle(SocketMethods.gitList, (params) => {
      seen.lists++;
      if (!sameRemote(params.url, REMOTE))
        throw new RpcError(RpcErrorCode.ServerError, "not this project's remote");
      const out = execFileSync(
        "git",
        ["--git-dir", upstream, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"],
        {
          encoding: "utf8",
        },
      );
      const refs = out
        .trim()
        .split("\n")
        .map((l) => {
          const [oid, name] = l.split(" ");
          return { oid: oid as string, name: name as string };
        });
      return { refs, head: "main" };
    });
    // The host's fetch, from the upstream repository: a bundle read back in small chunks.
    peer.handle(SocketMethods.gitFetch, (params) => {
      seen.fetches.push(params.branches);
      const file = join(dir, `fetch-${seen.fetches.length}.bundle`);
      execFileSync("git", [
        "--git-dir",
        upstream,
        "bundle",
        "create",
        "-q",
        file,
        ...params.branches.map((b) => `refs/heads/${b}`),
      ]);
      const bundle_id = randomUUID();
      bundles.set(bundle_id, readFileSync(file));
      return { bundle_id, bytes: bundles.get(bundle_id)?.length ?? 0 };
    });
    peer.handle(SocketMethods.gitFetchRead, (params) => {
      const bytes = bundles.get(params.bundle_id) ?? Buffer.alloc(0);
      const chunk = bytes.subarray(params.offset, params.offset + 700);
      return { data: chunk.toString("base64"), eof: params.offset + chunk.length >= bytes.length };
    });
    peer.handle(SocketMethods.gitPush, (params) => {
      seen.pushes.push(params);
      const refusal = refusals.get(params.dst);
      if (refusal !== undefined)
        throw new RpcError(RpcErrorCode.ServerError, refusal, { reason: "rejected" });
      return { commit: "2".repeat(40), outcome: "created" as const };
    });
  });
  await new Promise<void>((done) => server.listen(socketPath, done));

  // The image's shim, on PATH.
  const bin = join(dir, "bin");
  execFileSync("mkdir", ["-p", bin]);
  const main = resolve("container-client/src/main.ts");
  // git runs it in the repository: tsx is named by its path, not looked up from there.
  const tsx = pathToFileURL(resolve("node_modules/tsx/dist/loader.mjs")).href;
  writeFileSync(
    join(bin, "git-remote-oubliette"),
    `#!/bin/sh\nexec "${process.execPath}" --import "${tsx}" "${main}" git-remote "$@"\n`,
  );
  chmodSync(join(bin, "git-remote-oubliette"), 0o755);

  repo = join(dir, "repo");
  const plain = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  execFileSync("git", ["init", "-q", "-b", "main", repo], { env: plain });
  execFileSync("git", ["-C", repo, "remote", "add", "origin", REMOTE], { env: plain });
  writeFileSync(join(repo, "a.txt"), "a\n");
  execFileSync("git", ["-C", repo, "add", "."], { env: plain });
  execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], {
    env: plain,
  });
  execFileSync("git", ["-C", repo, "branch", "feature"], { env: plain });
  // The remote: what was committed so far, plus a branch only it has.
  upstream = join(dir, "upstream.git");
  execFileSync("git", ["clone", "-q", "--bare", repo, upstream], { env: plain });
  const other = join(dir, "other");
  execFileSync("git", ["clone", "-q", upstream, other], { env: plain });
  execFileSync("git", ["-C", other, "checkout", "-q", "-b", "news"], { env: plain });
  writeFileSync(join(other, "news.txt"), "news\n");
  execFileSync("git", ["-C", other, "add", "."], { env: plain });
  execFileSync("git", ["-C", other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "news"], {
    env: plain,
  });
  execFileSync("git", ["-C", other, "push", "-q", "origin", "news"], { env: plain });
  // Local work the remote does not have yet.
  writeFileSync(join(repo, "b.txt"), "b\n");
  execFileSync("git", ["-C", repo, "add", "."], { env: plain });
  execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two"], {
    env: plain,
  });
  env = {
    ...plain,
    ...sessionGitEnv(REMOTE),
    PATH: `${bin}:${process.env.PATH}`,
    OUBLIETTE_SOCKET: socketPath,
    OUBLIETTE_SESSION_TOKEN: TOKEN,
    GIT_TERMINAL_PROMPT: "0",
  };
}, 30_000);

afterAll(async () => {
  await new Promise<void>((done) => server.close(() => done()));
  rmSync(dir, { recursive: true, force: true });
});

describe("git-remote-oubliette", () => {
  it("answers ls-remote from the host's list of the project's remote", async () => {
    const out = await gitAsync(["-C", repo, "ls-remote", "origin"], { env });
    const main = execFileSync("git", ["--git-dir", upstream, "rev-parse", "main"], {
      encoding: "utf8",
    }).trim();
    expect(out.stdout).toContain(`${main}\trefs/heads/main`);
    expect(seen.hellos).toContain("git-remote-oubliette");
  }, 30_000);

  it("sends a push of a branch to the host with the repository's path, and git reports it done", async () => {
    const before = seen.pushes.length;
    const out = await gitAsync(["-C", repo, "push", "--porcelain", "origin", "feature:review/feature"], {
      env,
    });
    expect(out.stdout).toMatch(/refs\/heads\/feature:refs\/heads\/review\/feature/);
    const push = seen.pushes.slice(before);
    expect(push).toEqual([
      { url: REMOTE, git_dir: join(repo, ".git"), src: "feature", dst: "review/feature" },
    ]);
  }, 30_000);

  it("pushes HEAD as its branch, and a bare commit through a temporary branch removed after", async () => {
    const before = seen.pushes.length;
    await gitAsync(["-C", repo, "push", "origin", "HEAD:refs/heads/from-head"], { env });
    await gitAsync(["-C", repo, "push", "origin", "HEAD~0:refs/heads/from-commit"], { env });
    const [fromHead, fromCommit] = seen.pushes.slice(before);
    expect(fromHead).toMatchObject({ src: "main", dst: "from-head" });
    expect(fromCommit?.src).toMatch(/^oubliette-push\//);
    expect(fromCommit?.dst).toBe("from-commit");
    const branches = execFileSync("git", ["-C", repo, "branch", "--list"], { encoding: "utf8" });
    expect(branches).not.toContain("oubliette-push");
  }, 30_000);

  it("fetches a branch only the remote has, through the host's bundle read in chunks", async () => {
    const news = execFileSync("git", ["--git-dir", upstream, "rev-parse", "news"], {
      encoding: "utf8",
    }).trim();
    await gitAsync(["-C", repo, "fetch", "origin", "news"], { env });
    expect(seen.fetches.at(-1)).toEqual(["news"]);
    const fetched = execFileSync("git", ["-C", repo, "rev-parse", "FETCH_HEAD"], { encoding: "utf8" }).trim();
    expect(fetched).toBe(news);
    const file = execFileSync("git", ["-C", repo, "show", `${news}:news.txt`], { encoding: "utf8" });
    expect(file).toBe("news\n");
    // The bundle file is gone from the repository.
    expect(readdirSync(join(repo, ".git")).filter((f) => f.startsWith("oubliette-fetch"))).toEqual([]);
    // A plain fetch updates the remote-tracking branches.
    await gitAsync(["-C", repo, "fetch", "origin"], { env });
    const tracking = execFileSync("git", ["-C", repo, "rev-parse", "origin/news"], {
      encoding: "utf8",
    }).trim();
    expect(tracking).toBe(news);
  }, 30_000);

  it("shows the host's refusal as git's error for that ref", async () => {
    refusals.set("main", "the remote refused the push of main: non-fast-forward");
    const failed = await gitAsync(["-C", repo, "push", "origin", "main"], { env }).then(
      () => null,
      (error: { stderr?: string }) => error,
    );
    expect(failed?.stderr).toContain("non-fast-forward");
  }, 30_000);

  it("refuses force pushes and deletions without asking the host", async () => {
    const before = seen.pushes.length;
    const forced = await gitAsync(["-C", repo, "push", "--force", "origin", "feature:news"], { env }).then(
      () => null,
      (error: { stderr?: string }) => error,
    );
    expect(forced?.stderr).toContain("force pushes are not allowed");
    const deleted = await gitAsync(["-C", repo, "push", "origin", ":main"], { env }).then(
      () => null,
      (error: { stderr?: string }) => error,
    );
    expect(deleted?.stderr).toContain("deleting a branch is not allowed");
    expect(seen.pushes.length).toBe(before);
  }, 30_000);

  it("fails clearly outside a session (no socket in the environment)", async () => {
    const { OUBLIETTE_SOCKET: _s, ...outside } = env;
    const failed = await gitAsync(["-C", repo, "ls-remote", "origin"], { env: outside }).then(
      () => null,
      (error: { stderr?: string }) => error,
    );
    expect(failed?.stderr).toContain("no session socket here");
  }, 30_000);
});

describe("push specs", () => {
  it("reads force, source and destination", () => {
    expect(parsePushSpec("refs/heads/a:refs/heads/b")).toEqual({
      force: false,
      src: "refs/heads/a",
      dst: "refs/heads/b",
    });
    expect(parsePushSpec("+refs/heads/a:refs/heads/a").force).toBe(true);
    expect(parsePushSpec(":refs/heads/gone")).toEqual({ force: false, src: "", dst: "refs/heads/gone" });
  });
});
