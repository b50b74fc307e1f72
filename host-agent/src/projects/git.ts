/**
 * git, as the host-agent runs it for `workspace_create` (the host has the network; containers do
 * not): execFile with an argv array, never a shell, with a timeout, no prompts, `--` before every
 * user string so a URL can never be read as an option, and the closed environment of
 * git/git-env.ts. A remote is checked against the host's policy before git runs
 * (git/remote-policy.ts); a credential is given to that run and that remote only.
 */
import type { GitCredentials } from "../git/git-credentials.js";
import { runGit } from "../git/git-run.js";
import { checkRemote, type RemotePolicy } from "../git/remote-policy.js";
import { HostError } from "./errors.js";

const INIT_TIMEOUT_MS = 15_000;
const CLONE_TIMEOUT_MS = 120_000;

/** What the host's git may reach, and with which credentials. */
export interface HostGitSettings {
  policy: RemotePolicy;
  credentials: GitCredentials;
}

/** `git init` in an existing directory. */
export function gitInit(dir: string): Promise<void> {
  return runGit(["init", "--quiet", "--", dir], INIT_TIMEOUT_MS, { protocols: [] }).then(() => {});
}

/**
 * `git clone <url> <dir>`, after the remote passed the host's policy, with the named credential
 * (if any) for that remote only; `dir` must not exist yet (git removes it again on failure).
 */
export async function gitClone(
  url: string,
  dir: string,
  git: HostGitSettings,
  credential?: string,
): Promise<void> {
  const remote = await checkRemote(url, git.policy);
  const config = credential === undefined ? [] : git.credentials.configFor(credential, remote);
  await runGit(["clone", "--quiet", "--no-local", "--", url, dir], CLONE_TIMEOUT_MS, {
    protocols: [remote.protocol],
    config,
  });
}

/**
 * Starts branch `name` in a repository this host has just made (cloned or initialised, before
 * any agent could write to it): from the remote's `base`, or from what was checked out. Returns
 * the commit it starts from (null in a repository without one).
 */
export async function gitStartBranch(
  dir: string,
  name: string,
  base: string | undefined,
): Promise<string | null> {
  const from = base === undefined ? [] : [`refs/remotes/origin/${base}`];
  await runGit(["-C", dir, "checkout", "--quiet", "--no-track", "-b", name, ...from, "--"], INIT_TIMEOUT_MS, {
    protocols: [],
  }).catch((error: unknown) => {
    throw new HostError(
      base !== undefined && /invalid reference|not a commit|unknown revision/i.test(String(error))
        ? "not_found"
        : "exec_failed",
      base !== undefined
        ? `could not start branch ${name} from ${base}: ${(error as Error).message}`
        : `could not start branch ${name}: ${(error as Error).message}`,
      { cause: error },
    );
  });
  const head = await runGit(
    ["-C", dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
    INIT_TIMEOUT_MS,
    {
      protocols: [],
    },
  ).catch(() => null);
  return head === null ? null : head.stdout.trim() || null;
}
