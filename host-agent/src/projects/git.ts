/**
 * git, as the host-agent runs it for `workspace_create` (the host has the network; containers do
 * not): execFile with an argv array, never a shell, with a timeout, no prompts, `--` before every
 * user string so a URL can never be read as an option, and the closed environment of
 * git/git-env.ts. A remote is checked against the host's policy before git runs
 * (git/remote-policy.ts); a credential is given to that run and that remote only.
 */
import { execFile } from "node:child_process";
import type { GitCredentials } from "../git/git-credentials.js";
import { closedGitEnv, type GitRunSettings } from "../git/git-env.js";
import { checkRemote, type RemotePolicy } from "../git/remote-policy.js";
import { HostError } from "./errors.js";

const INIT_TIMEOUT_MS = 15_000;
const CLONE_TIMEOUT_MS = 120_000;
/** How much of git's complaint an error message carries. */
const MAX_STDERR = 2_000;

/** What the host's git may reach, and with which credentials. */
export interface HostGitSettings {
  policy: RemotePolicy;
  credentials: GitCredentials;
}

function run(args: string[], timeoutMs: number, settings: GitRunSettings): Promise<void> {
  const env = closedGitEnv(settings);
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 1024 * 1024, shell: false },
      (error, _stdout, stderr) => {
        if (!error) return resolve();
        const why =
          (error as NodeJS.ErrnoException).code === "ENOENT"
            ? "git is not installed on this host"
            : String(stderr).trim().slice(-MAX_STDERR) || error.message;
        const timedOut = error.killed === true;
        reject(
          new HostError(
            "exec_failed",
            timedOut
              ? `git ${args[0]} took longer than ${timeoutMs / 1000} s`
              : `git ${args[0]} failed: ${why}`,
            { cause: error },
          ),
        );
      },
    );
  });
}

/** `git init` in an existing directory. */
export function gitInit(dir: string): Promise<void> {
  return run(["init", "--quiet", "--", dir], INIT_TIMEOUT_MS, { protocols: [] });
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
  await run(["clone", "--quiet", "--no-local", "--", url, dir], CLONE_TIMEOUT_MS, {
    protocols: [remote.protocol],
    config,
  });
}
