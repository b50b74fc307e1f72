/**
 * Git credentials held by the host, like model keys (docs/git.md): a JSON file
 * (`--git-credentials`) naming each credential, `{"github-acme": {"token": "…", "username": "…"}}`.
 * A project names one (`git_credential`); the host gives it to git for one run and one remote
 * only, as an HTTP Authorization header in that run's environment (git-env.ts). It is never put
 * in a container, a workspace, a repository's config, an event or a log line.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { GitCredentialNameSchema } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { CheckedRemote } from "./remote-policy.js";

const CredentialSchema = z.object({
  /** An HTTPS token (a forge's personal access or deploy token). */
  token: z.string().min(1).max(4096),
  /** The user name sent with it (forges accept any for a token; GitHub suggests x-access-token). */
  username: z.string().min(1).max(256).default("x-access-token"),
});
const CredentialsFileSchema = z.record(GitCredentialNameSchema, CredentialSchema);

export type GitCredential = z.infer<typeof CredentialSchema>;

export class GitCredentials {
  readonly #byName: ReadonlyMap<string, GitCredential>;

  constructor(byName: ReadonlyMap<string, GitCredential> = new Map()) {
    this.#byName = byName;
  }

  /** Reads the credentials file; an unreadable or invalid file is an error naming what is wrong. */
  static load(file: string | undefined): GitCredentials {
    if (file === undefined) return new GitCredentials();
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(file, "utf8"));
    } catch (err) {
      throw new Error(`cannot read the git credentials file: ${(err as Error).message}`);
    }
    const parsed = CredentialsFileSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`invalid git credentials file: ${issue?.path.join(".") ?? ""} ${issue?.message ?? ""}`);
    }
    return new GitCredentials(new Map(Object.entries(parsed.data)));
  }

  /** The names this host holds (never the secrets). */
  names(): string[] {
    return [...this.#byName.keys()].sort();
  }

  /** The token of credential `name`, for a forge's API (never logged, never sent to a container). */
  tokenFor(name: string): string {
    return this.#get(name).token;
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
   * The config that gives credential `name` to one run against `remote` (its origin only); an
   * unknown name is an error saying which names this host has.
   */
  configFor(name: string, remote: CheckedRemote): [string, string][] {
    const credential = this.#get(name);
    if (remote.origin === null || !(remote.protocol === "https" || remote.protocol === "http"))
      throw new HostError(
        "invalid",
        `git credential ${name} is an HTTPS token; the remote is ${remote.protocol}://`,
      );
    const basic = Buffer.from(`${credential.username}:${credential.token}`).toString("base64");
    return [[`http.${remote.origin}/.extraHeader`, `Authorization: Basic ${basic}`]];
  }
}
