/**
 * Runs git on the host: execFile with an argv array (never a shell), the closed environment of
 * git-env.ts, a timeout, and a bounded output. A failure is a HostError("exec_failed") carrying
 * the end of git's complaint (which never holds a credential: those travel in the environment).
 */
import { execFile } from "node:child_process";
import { HostError } from "../projects/errors.js";
import { closedGitEnv, type GitRunSettings } from "./git-env.js";

/** How much of git's complaint an error message carries. */
const MAX_STDERR = 2_000;

export interface GitOutput {
  stdout: string;
  stderr: string;
}

export function runGit(
  args: string[],
  timeoutMs: number,
  settings: GitRunSettings,
  cwd?: string,
): Promise<GitOutput> {
  const env = closedGitEnv(settings);
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { cwd, env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, shell: false },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout: String(stdout), stderr: String(stderr) });
        const why =
          (error as NodeJS.ErrnoException).code === "ENOENT"
            ? "git is not installed on this host"
            : String(stderr).trim().slice(-MAX_STDERR) || error.message;
        const timedOut = error.killed === true;
        const failure = new HostError(
          "exec_failed",
          timedOut
            ? `git ${args[0]} took longer than ${timeoutMs / 1000} s`
            : `git ${args[0]} failed: ${why}`,
          { cause: error },
        );
        Object.assign(failure, { stdout: String(stdout) });
        reject(failure);
      },
    );
  });
}
