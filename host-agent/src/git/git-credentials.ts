/**
 * Git credentials held by the host, like model keys (docs/git.md): a JSON file
 * (`--git-credentials`) naming each credential. A credential is an HTTPS token, an SSH deploy
 * key, or both (a key for git over ssh://, the token for the forge's API):
 *
 *     {"github-acme": {"token": "…", "username": "x-access-token"},
 *      "deploy-acme": {"ssh_key_file": "/etc/oubliette/acme.key", "known_hosts_file": "/etc/oubliette/known_hosts"}}
 *
 * A project names one (`git_credential`); the host gives it to git for one run and one remote
 * only, in that run's environment (git-env.ts): a token as an HTTP Authorization header, a key as
 * the `-i` of the ssh git runs. The key stays in its file (ssh reads it; the host never copies
 * it). Nothing of a credential is put in a container, a workspace, a repository's config, an
 * event or a log line.
 */
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { GitCredentialNameSchema } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { CheckedRemote } from "./remote-policy.js";
import { sshCommand } from "./ssh-command.js";

/** A file ssh is given: absolute, and nothing ssh or a shell would split, unquote or expand. */
const AbsolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine(
    (path) => isAbsolute(path) && !/[\s"'%\\]/.test(path),
    "is not an absolute path without spaces, quotes or %",
  );

const CredentialSchema = z
  .strictObject({
    /** An HTTPS token (a forge's personal access or deploy token), also used for its API. */
    token: z.string().min(1).max(4096).optional(),
    /** The user name sent with it (forges accept any for a token; GitHub suggests x-access-token). */
    username: z.string().min(1).max(256).default("x-access-token"),
    /** An SSH private key (a deploy key) for ssh:// remotes: a file only the host-agent can read. */
    ssh_key_file: AbsolutePath.optional(),
    /** The servers' host keys (OpenSSH known_hosts); default: the host user's own ~/.ssh/known_hosts. */
    known_hosts_file: AbsolutePath.optional(),
  })
  .refine((c) => c.token !== undefined || c.ssh_key_file !== undefined, {
    message: "a credential needs a token, an ssh_key_file, or both",
  })
  .refine((c) => c.known_hosts_file === undefined || c.ssh_key_file !== undefined, {
    message: "known_hosts_file goes with an ssh_key_file",
  });
const CredentialsFileSchema = z.record(GitCredentialNameSchema, CredentialSchema);

export type GitCredential = z.input<typeof CredentialSchema>;

/**
 * The credentials file cannot be used: unreadable (`errno` says why), not JSON, or invalid. Its
 * message names fields, credential names and key files, never a secret.
 */
export class GitCredentialsError extends Error {
  constructor(
    readonly code: "unreadable" | "not_json" | "invalid",
    message: string,
    readonly errno?: string,
  ) {
    super(message);
  }
}

/** The files an SSH credential names must be there, and its key readable by this process alone. */
function checkSshFiles(name: string, credential: GitCredential): void {
  const fail = (why: string): never => {
    throw new GitCredentialsError("invalid", `invalid git credentials file: ${name}: ${why}`);
  };
  for (const file of [credential.ssh_key_file, credential.known_hosts_file]) {
    if (file === undefined) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      fail(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (credential.ssh_key_file === undefined) return;
  const stat = statSync(credential.ssh_key_file);
  if (!stat.isFile()) fail(`${credential.ssh_key_file} is not a file`);
  // ssh itself refuses such a key; saying so at start beats a failed push later.
  if ((stat.mode & 0o077) !== 0)
    fail(
      `${credential.ssh_key_file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}); chmod 600 it`,
    );
}

export class GitCredentials {
  readonly #byName: ReadonlyMap<string, GitCredential>;

  constructor(byName: ReadonlyMap<string, GitCredential> = new Map()) {
    this.#byName = byName;
  }

  /** Reads the credentials file; an unreadable or invalid file is an error naming what is wrong. */
  static load(file: string | undefined): GitCredentials {
    if (file === undefined) return new GitCredentials();
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      const errno = (err as NodeJS.ErrnoException).code ?? "error";
      throw new GitCredentialsError("unreadable", `cannot read the git credentials file: ${errno}`, errno);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // Not the parser's message: it quotes the text around the fault, which may be a token.
      throw new GitCredentialsError("not_json", "the git credentials file is not JSON");
    }
    const parsed = CredentialsFileSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new GitCredentialsError(
        "invalid",
        `invalid git credentials file: ${issue?.path.join(".") ?? ""} ${issue?.message ?? ""}`,
      );
    }
    for (const [name, credential] of Object.entries(parsed.data)) checkSshFiles(name, credential);
    return new GitCredentials(new Map(Object.entries(parsed.data)));
  }

  /** The names this host holds (never the secrets). */
  names(): string[] {
    return [...this.#byName.keys()].sort();
  }

  /** The token of credential `name`, for a forge's API (never logged, never sent to a container). */
  tokenFor(name: string): string {
    const { token } = this.#get(name);
    if (token === undefined)
      throw new HostError(
        "invalid",
        `git credential ${name} holds only an SSH key; the forge's API needs a token: add one to it`,
      );
    return token;
  }

  #get(name: string): GitCredential {
    const credential = this.#byName.get(name);
    if (credential === undefined) {
      const known = this.names();
      throw new HostError(
        "invalid",
        `this host has no git credential named ${name}` +
          (known.length > 0 ? ` (it has ${known.join(", ")})` : " (it has none: see --git-credentials)"),
      );
    }
    return credential;
  }

  /**
   * The config that gives credential `name` to one run against `remote` (its origin only, for a
   * token); an unknown name, or a credential of the wrong kind for the remote, is an error.
   */
  configFor(name: string, remote: CheckedRemote): [string, string][] {
    const credential = this.#get(name);
    if (remote.protocol === "ssh") {
      if (credential.ssh_key_file === undefined)
        throw new HostError(
          "invalid",
          `git credential ${name} is an HTTPS token; an ssh:// remote needs an ssh_key_file`,
        );
      return [["core.sshCommand", sshCommand(credential.ssh_key_file, credential.known_hosts_file)]];
    }
    if (credential.token === undefined || remote.origin === null || remote.protocol === "file")
      throw new HostError(
        "invalid",
        credential.token === undefined
          ? `git credential ${name} is an SSH key; a ${remote.protocol}:// remote needs a token`
          : `git credential ${name} is an HTTPS token; the remote is ${remote.protocol}://`,
      );
    const basic = Buffer.from(`${credential.username ?? "x-access-token"}:${credential.token}`).toString(
      "base64",
    );
    return [[`http.${remote.origin}/.extraHeader`, `Authorization: Basic ${basic}`]];
  }
}
