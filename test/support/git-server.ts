/**
 * A real git server for tests: git's own `git http-backend` (the smart HTTP protocol, from the git
 * package) behind a small HTTP server on loopback that checks HTTP Basic auth against one token,
 * and records every request's method, path and Authorization header (so a test can prove where a
 * credential went, and where it did not). Repositories live under a scratch directory.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SeenRequest {
  method: string;
  path: string;
  authorization: string | null;
}

export interface GitServerOptions {
  /** The Basic auth user and token every request must carry (none: open to all). */
  auth?: { username: string; token: string };
}

/** The git that serves, and that tests use to inspect repositories: no user or system config. */
export const TEST_GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
};

/**
 * git as a test runs it against this server: asynchronous, since the server answers in the same
 * process (a synchronous git would block the very event loop that must answer it).
 */
export function gitAsync(cwd: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args],
      { cwd, env: TEST_GIT_ENV, encoding: "utf8" },
      (error, stdout, stderr) =>
        error ? reject(new Error(`git ${args.join(" ")}: ${stderr}`)) : resolve(stdout),
    );
  });
}

/** git for local work that talks to no server of this process (seeding repositories). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    env: TEST_GIT_ENV,
    encoding: "utf8",
  });
}

/** A bare repository `<root>/<name>.git` holding one commit (on main) with `files`; its path. */
export function seedBareRepo(root: string, name: string, files: Record<string, string>): string {
  const work = mkdtempSync(join(tmpdir(), "oub-git-seed-"));
  const bare = join(root, `${name}.git`);
  try {
    git(work, "init", "--quiet", "--initial-branch=main");
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(work, path, ".."), { recursive: true });
      writeFileSync(join(work, path), content);
    }
    git(work, "add", "-A");
    git(work, "commit", "--quiet", "-m", "first");
    git(root, "clone", "--quiet", "--bare", work, bare);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return bare;
}

/** The branches of `<root>/<name>.git` and their commits. */
export function repoHeads(root: string, name: string): Record<string, string> {
  const out = git(
    join(root, `${name}.git`),
    "for-each-ref",
    "--format=%(refname:short) %(objectname)",
    "refs/heads",
  );
  return Object.fromEntries(
    out
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ") as [string, string]),
  );
}

function backendPath(): string {
  return join(execFileSync("git", ["--exec-path"], { encoding: "utf8" }).trim(), "git-http-backend");
}

export class GitServer {
  readonly seen: SeenRequest[] = [];

  private constructor(
    readonly root: string,
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(options: GitServerOptions = {}): Promise<GitServer> {
    const root = mkdtempSync(join(tmpdir(), "oub-git-server-"));
    const backend = backendPath();
    let self: GitServer | undefined;
    const server = createServer((req, res) => {
      self?.seen.push({
        method: req.method ?? "",
        path: req.url ?? "",
        authorization: req.headers.authorization ?? null,
      });
      if (options.auth && !authorized(req, options.auth)) {
        res.writeHead(401, { "www-authenticate": 'Basic realm="test git"' });
        res.end("unauthorized\n");
        return;
      }
      serveCgi(backend, root, req, res, options.auth?.username ?? null);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    self = new GitServer(root, server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** A bare repository `name` (`<name>.git`) holding one commit with `files`; its clone URL. */
  createRepo(name: string, files: Record<string, string>): string {
    const bare = seedBareRepo(this.root, name, files);
    // Pushes over smart HTTP need this on the repository.
    git(bare, "config", "http.receivepack", "true");
    return `${this.url}/${name}.git`;
  }

  /** The branches of repository `name` as the server's side sees them. */
  heads(name: string): Record<string, string> {
    return repoHeads(this.root, name);
  }

  async close(): Promise<void> {
    // Keep-alive connections would hold close() open: end them with it.
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    rmSync(this.root, { recursive: true, force: true });
  }
}

function authorized(req: IncomingMessage, auth: { username: string; token: string }): boolean {
  const header = req.headers.authorization ?? "";
  const expected = `Basic ${Buffer.from(`${auth.username}:${auth.token}`).toString("base64")}`;
  return header === expected;
}

/** Runs git-http-backend for one request (CGI), streaming the body in and the answer out. */
function serveCgi(
  backend: string,
  root: string,
  req: IncomingMessage,
  res: ServerResponse,
  user: string | null,
): void {
  const url = new URL(req.url ?? "/", "http://git.test");
  const child = spawn(backend, [], {
    env: {
      ...TEST_GIT_ENV,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? "GET",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] } : {}),
      ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
      REMOTE_ADDR: "127.0.0.1",
      ...(user !== null ? { REMOTE_USER: user } : {}),
    },
    stdio: ["pipe", "pipe", "ignore"],
  });
  req.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headerDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headerDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end === -1) return;
    headerDone = true;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + 4));
  });
  child.on("close", () => {
    if (!headerDone) res.writeHead(502);
    res.end();
  });
}
