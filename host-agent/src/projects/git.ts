/**
 * git, as the host-agent runs it for `workspace_create` (the host has the network; containers do
 * not): execFile with an argv array, never a shell, with a timeout, no prompts, and `--` before
 * every user string so a URL can never be read as an option.
 */
import { execFile } from "node:child_process";
import { HostError } from "./errors.js";

const INIT_TIMEOUT_MS = 15_000;
const CLONE_TIMEOUT_MS = 120_000;
/** How much of git's complaint an error message carries. */
const MAX_STDERR = 2_000;

function run(args: string[], timeoutMs: number, cwd?: string): Promise<void> {
  const env: Record<string, string> = {
    GIT_TERMINAL_PROMPT: "0",
    // Never ask for a host key or a passphrase: there is no one to answer.
    GIT_SSH_COMMAND: "ssh -o BatchMode=yes",
  };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { cwd, env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 1024 * 1024, shell: false },
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
  return run(["init", "--quiet", dir], INIT_TIMEOUT_MS);
}

/** `git clone <url> <dir>`; `dir` must not exist yet (git removes it again on failure). */
export function gitClone(url: string, dir: string): Promise<void> {
  return run(["clone", "--quiet", "--", url, dir], CLONE_TIMEOUT_MS);
}
