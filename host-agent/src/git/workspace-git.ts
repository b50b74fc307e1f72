/**
 * `status`, `diff` and `commit` of a workspace (docs/git.md). They need its working tree, which is
 * the agent's: so they run in the container, as the workspace's session, and the host only reads
 * what they print. git there still runs with hooks, fsmonitor, external diffs and textconv off,
 * so what the host is shown does not depend on programs the repository names.
 */

import type { GitAuthor, WorkspaceGitParams, WorkspaceGitResult } from "../../../protocol/tunnel-git.js";
import type { ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import { parseNameStatus, parseStatus } from "./git-porcelain.js";

/** Runs an argv in the workspace's directory in the container, as its session. */
export type WorkspaceExec = (
  command: string[],
  limits?: { outputBytes?: number; timeoutMs?: number },
) => Promise<ContainerExecResult>;

const GIT = [
  "git",
  "--no-pager",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "diff.external=",
  "-c",
  "color.ui=false",
];
const LIST_BYTES = 1024 * 1024;

/** The base a diff compares with when none is named: the one the workspace was branched from. */
export type BaseOf = () => Promise<string | null>;

export async function workspaceGit(
  exec: WorkspaceExec,
  params: WorkspaceGitParams,
  baseOf: BaseOf,
): Promise<WorkspaceGitResult> {
  switch (params.op) {
    case "status":
      return status(exec);
    case "diff":
      return diff(exec, params.base ?? (await baseOf()) ?? "HEAD", params.max_bytes);
    case "commit":
      return commit(exec, params.message, params.author);
  }
}

async function git(exec: WorkspaceExec, args: string[], outputBytes = 64 * 1024): Promise<string> {
  const result = await exec([...GIT, ...args], { outputBytes });
  if (result.timed_out) throw new HostError("exec_failed", `git ${args[0]} in the workspace took too long`);
  if (result.exit_code !== 0) {
    const why = result.stderr.trim().slice(-1000) || `exit code ${result.exit_code}`;
    if (/not a git repository/i.test(why))
      throw new HostError(
        "invalid",
        "the workspace is not a git repository (create the project with init_git or remote_url)",
      );
    throw new HostError("exec_failed", `git ${args[0]} in the workspace failed: ${why}`);
  }
  return result.stdout;
}

/** The commit a revision names, or null when it names none (no commit yet). */
async function commitOf(exec: WorkspaceExec, revision: string): Promise<string | null> {
  const result = await exec([
    ...GIT,
    "rev-parse",
    "--verify",
    "--quiet",
    "--end-of-options",
    `${revision}^{commit}`,
  ]);
  const sha = result.stdout.trim();
  return result.exit_code === 0 && /^[0-9a-f]{40,64}$/.test(sha) ? sha : null;
}

async function status(exec: WorkspaceExec): Promise<WorkspaceGitResult> {
  const out = await git(
    exec,
    ["status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all"],
    LIST_BYTES,
  );
  const parsed = parseStatus(out);
  return {
    op: "status",
    branch: parsed.branch,
    head: await commitOf(exec, "HEAD"),
    clean: parsed.files.length === 0,
    files: parsed.files,
    truncated: parsed.truncated,
  };
}

/**
 * The working tree, new files included, against `base`: through a throwaway copy of the index
 * (`git add -A` into it), so the workspace's own index is left as it was.
 */
const DIFF_SCRIPT = [
  "set -e",
  "idx=$(mktemp)",
  "trap 'rm -f \"$idx\"' EXIT",
  "src=$(git rev-parse --git-path index)",
  'if [ -f "$src" ]; then cp "$src" "$idx"; else rm -f "$idx"; fi',
  'export GIT_INDEX_FILE="$idx"',
  "git -c core.fsmonitor=false -c core.hooksPath=/dev/null add -A",
  'exec git --no-pager -c core.fsmonitor=false -c diff.external= -c color.ui=false diff --cached --no-ext-diff --no-textconv "$@"',
].join("\n");

async function diff(exec: WorkspaceExec, base: string, maxBytes: number): Promise<WorkspaceGitResult> {
  const baseCommit = await commitOf(exec, base);
  if (baseCommit === null)
    throw new HostError("not_found", `the workspace has no revision ${base} to compare with`);
  const run = (args: string[], outputBytes: number) =>
    exec(["sh", "-c", DIFF_SCRIPT, "sh", ...args, baseCommit, "--"], { outputBytes });
  const names = await run(["--name-status", "-z", "-M"], LIST_BYTES);
  if (names.exit_code !== 0)
    throw new HostError(
      "exec_failed",
      `git diff in the workspace failed: ${names.stderr.trim().slice(-1000)}`,
    );
  const listed = parseNameStatus(names.stdout);
  const patch = await run(["-M"], maxBytes);
  if (patch.exit_code !== 0 && !patch.truncated)
    throw new HostError(
      "exec_failed",
      `git diff in the workspace failed: ${patch.stderr.trim().slice(-1000)}`,
    );
  return {
    op: "diff",
    base,
    base_commit: baseCommit,
    files: listed.files,
    diff: patch.stdout,
    truncated: patch.truncated || listed.truncated,
  };
}

async function commit(exec: WorkspaceExec, message: string, author: GitAuthor): Promise<WorkspaceGitResult> {
  await git(exec, ["add", "-A"]);
  const staged = await exec([...GIT, "diff", "--cached", "--quiet"]);
  const branch = (await exec([...GIT, "symbolic-ref", "--quiet", "--short", "HEAD"])).stdout.trim() || null;
  if (staged.exit_code === 0)
    return { op: "commit", committed: false, branch, commit: await commitOf(exec, "HEAD") };
  const who = ["-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`];
  await git(exec, [...who, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message]);
  return { op: "commit", committed: true, branch, commit: await commitOf(exec, "HEAD") };
}
