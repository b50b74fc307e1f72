/**
 * An agent's own `git push` / `git fetch` / `git ls-remote` inside its container (docs/git.md): the container
 * has no network, so the workspace's remote is reached through `git-remote-oubliette`, which asks
 * this host over the session's socket. Only the project's remote is served, with the host's
 * credential, and a push goes the way every push goes: the container bundles the branch as the
 * session, the project's repository here takes it and pushes it. No force pushes.
 */
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { ParsedParams, SentResult } from "../../../protocol/rpc/method.js";
import type { SocketMethods } from "../../../protocol/socket.js";
import type { GitPush, SessionGit } from "../../../protocol/tunnel-git.js";
import { HostError } from "../projects/errors.js";
import type { ProjectGit } from "./project-git.js";

type ListParams = ParsedParams<typeof SocketMethods.gitList>;
type PushParams = ParsedParams<typeof SocketMethods.gitPush>;
type FetchParams = ParsedParams<typeof SocketMethods.gitFetch>;
type ReadParams = ParsedParams<typeof SocketMethods.gitFetchRead>;

export class AgentGit {
  constructor(
    readonly git: ProjectGit,
    /** The project's remote as its sessions were started with (null: none). */
    readonly remote: () => Promise<SessionGit | null>,
  ) {}

  async list(params: ListParams): Promise<SentResult<typeof SocketMethods.gitList>> {
    return answer(async () => {
      const remote = await this.#remoteFor(params.url);
      return this.git.remoteRefs(remote.remote_url, remote.git_credential);
    });
  }

  /** Fetches the remote's branches into a bundle the client reads with `read`. */
  async fetch(params: FetchParams): Promise<SentResult<typeof SocketMethods.gitFetch>> {
    return answer(async () => {
      const remote = await this.#remoteFor(params.url);
      return this.git.fetchBundle(remote.remote_url, remote.git_credential, params.branches);
    });
  }

  read(params: ReadParams): Promise<SentResult<typeof SocketMethods.gitFetchRead>> {
    return answer(() => this.git.fetched.read(params.bundle_id, params.offset));
  }

  /** Pushes and returns what the session is told (`git_pushed`). */
  async push(workspaceId: string, params: PushParams): Promise<GitPush> {
    return answer(async () => {
      const remote = await this.#remoteFor(params.url);
      const pushed = await this.git.push(workspaceId, {
        src: params.src,
        dst: params.dst,
        gitDir: params.git_dir,
        remoteUrl: remote.remote_url,
        credential: remote.git_credential,
      });
      return {
        branch: params.dst,
        commit: pushed.commit,
        outcome: pushed.outcome,
        remote_url: remote.remote_url,
      };
    });
  }

  async #remoteFor(url: string): Promise<SessionGit> {
    const remote = await this.remote();
    if (remote === null)
      throw new HostError("invalid", "this project has no remote_url; there is nowhere to push");
    if (sameRemote(url, remote.remote_url)) return remote;
    throw new HostError(
      "invalid",
      `${url} is not this project's remote; only ${remote.remote_url} is reachable`,
    );
  }
}

/** The same repository, whether or not either spelling ends in `.git` or `/`. */
export function sameRemote(a: string, b: string): boolean {
  const norm = (url: string) => url.replace(/\/+$/, "").replace(/\.git$/, "");
  return norm(a) === norm(b);
}

/** A refusal of the host becomes the socket's error, with its reason and words. */
async function answer<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof HostError)
      throw new RpcError(RpcErrorCode.ServerError, error.message, { reason: error.reason });
    throw error;
  }
}
