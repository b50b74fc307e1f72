/**
 * A real git server over SSH for tests: an SSH server on loopback (the ssh2 library: the real
 * protocol, with a real host key) that accepts one public key only and runs git's own
 * `git-upload-pack` / `git-receive-pack` for the command the client asks for, as sshd with a
 * forced git shell would. It records every authentication attempt and command, so a test can
 * prove which key reached it and what ran. The client side is the system's OpenSSH, run by git.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Connection, type ParsedKey, Server, utils } from "ssh2";
import { repoHeads, seedBareRepo, TEST_GIT_ENV } from "./git-server.js";

/** A key pair made by ssh-keygen: the private key's file (mode 0600) and the public key's line. */
export interface SshKeyPair {
  privateFile: string;
  publicLine: string;
}

/** `ssh-keygen -t ed25519` into `dir/name` (no passphrase). */
export function makeSshKey(dir: string, name: string): SshKeyPair {
  const privateFile = join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", privateFile]);
  return { privateFile, publicLine: readFileSync(`${privateFile}.pub`, "utf8").trim() };
}

export interface SeenSsh {
  user: string;
  /** The public key offered (its base64 blob), or null for another method. */
  key: string | null;
  accepted: boolean;
}

const GIT_COMMAND = /^(git-upload-pack|git-receive-pack) '\/?([A-Za-z0-9._-]+\.git)'$/;

function parsePublicKey(line: string): ParsedKey {
  const parsed = utils.parseKey(line);
  if (parsed instanceof Error) throw parsed;
  return parsed;
}

export class SshGitServer {
  readonly seen: SeenSsh[] = [];
  readonly commands: string[] = [];
  readonly #server: Server;
  readonly #clients: Set<Connection>;

  private constructor(
    readonly root: string,
    server: Server,
    readonly port: number,
    /** The server's host key, as a known_hosts line for `[127.0.0.1]:<port>`. */
    readonly knownHostsLine: string,
    clients: Set<Connection>,
  ) {
    this.#server = server;
    this.#clients = clients;
  }

  /** Starts a server that lets in `allowedKey` (a public key line) only. */
  static async start(allowedKey: string): Promise<SshGitServer> {
    const root = mkdtempSync(join(tmpdir(), "oub-ssh-git-"));
    const hostKey = utils.generateKeyPairSync("ed25519");
    const allowed = parsePublicKey(allowedKey);
    let self: SshGitServer | undefined;
    const clients = new Set<Connection>();
    const server = new Server({ hostKeys: [hostKey.private] }, (client) => {
      clients.add(client);
      client.on("close", () => clients.delete(client));
      client.on("error", () => {});
      client.on("authentication", (ctx) => {
        if (ctx.method === "none") return ctx.reject(["publickey"]); // a client's first question
        if (ctx.method !== "publickey") {
          self?.seen.push({ user: ctx.username, key: null, accepted: false });
          return ctx.reject(["publickey"]);
        }
        const matches =
          ctx.key.algo === allowed.type &&
          ctx.key.data.equals(allowed.getPublicSSH()) &&
          (ctx.signature === undefined ||
            allowed.verify(ctx.blob as Buffer, ctx.signature, ctx.hashAlgo) === true);
        // A client first asks whether a key would do (no signature), then signs: one entry per key.
        if (!matches || ctx.signature !== undefined)
          self?.seen.push({ user: ctx.username, key: ctx.key.data.toString("base64"), accepted: matches });
        return matches ? ctx.accept() : ctx.reject(["publickey"]);
      });
      client.on("ready", () => {
        client.on("session", (acceptSession) => {
          const session = acceptSession();
          const env: Record<string, string> = {};
          session.on("env", (accept, _reject, info) => {
            if (info.key === "GIT_PROTOCOL") env.GIT_PROTOCOL = info.val;
            accept?.();
          });
          session.on("exec", (accept, reject, info) => {
            self?.commands.push(info.command);
            const match = GIT_COMMAND.exec(info.command);
            if (match === null) return reject();
            const stream = accept();
            const [, program, repo] = match as unknown as [string, string, string];
            const child = spawn("git", [program.slice(4), join(root, repo)], {
              env: { ...TEST_GIT_ENV, ...env },
              stdio: ["pipe", "pipe", "pipe"],
            });
            stream.pipe(child.stdin);
            child.stdout.pipe(stream, { end: false });
            child.stderr.pipe(stream.stderr, { end: false });
            child.stdin.on("error", () => {});
            child.on("close", (code) => {
              stream.exit(code ?? 1);
              stream.end();
            });
          });
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const [type, blob] = hostKey.public.split(" ");
    self = new SshGitServer(root, server, port, `[127.0.0.1]:${port} ${type} ${blob}`, clients);
    return self;
  }

  /** A bare repository `name` holding one commit with `files`; its ssh:// URL (user git). */
  createRepo(name: string, files: Record<string, string>): string {
    seedBareRepo(this.root, name, files);
    return `ssh://git@127.0.0.1:${this.port}/${name}.git`;
  }

  /** The branches of repository `name` as the server's side sees them. */
  heads(name: string): Record<string, string> {
    return repoHeads(this.root, name);
  }

  async close(): Promise<void> {
    for (const client of this.#clients) client.end();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.root, { recursive: true, force: true });
  }
}
