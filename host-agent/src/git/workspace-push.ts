/**
 * A workspace's branch to the project's remote, without the host ever running git in the
 * workspace (docs/git.md): the container makes a bundle of the branch (`git bundle create`, run
 * as the workspace's session, its bytes streamed straight into a host-owned file), the project's
 * own repository on the host verifies and takes it, and pushes it from there.
 */
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { StdoutSink } from "../runtime/types.js";
import { checkBranch, type ProjectRepo, type PushResult } from "./project-repo.js";

/** The largest bundle taken from a workspace. */
const MAX_BUNDLE_BYTES = 1024 * 1024 * 1024;
const BUNDLE_TIMEOUT_MS = 300_000;

/** Runs an argv in the workspace in the container, its stdout into `stdout`. */
export type BundleExec = (
  command: string[],
  stdout: StdoutSink,
  timeoutMs: number,
) => Promise<ContainerExecResult>;

export interface BranchPush {
  /** The branch in the workspace. */
  src: string;
  /** The branch on the remote. */
  dst: string;
  /** The repository in the container when it is not the workspace's own (`--git-dir`). */
  gitDir?: string | undefined;
  remoteUrl: string;
  credential?: string | undefined;
}

export async function pushWorkspace(
  exec: BundleExec,
  repo: ProjectRepo,
  incoming: string,
  push: BranchPush,
): Promise<PushResult> {
  checkBranch(push.src);
  checkBranch(push.dst);
  await mkdir(incoming, { recursive: true, mode: 0o700 });
  const file = join(incoming, `${randomUUID()}.bundle`);
  try {
    await bundleInto(exec, push, file);
    await repo.importBundle(file, push.dst, push.src);
    return await repo.push(push.remoteUrl, push.dst, push.credential);
  } finally {
    await rm(file, { force: true });
  }
}

/** Streams `git bundle create - refs/heads/<src>` of the workspace into `file`. */
async function bundleInto(exec: BundleExec, push: BranchPush, file: string): Promise<void> {
  const out = createWriteStream(file, { mode: 0o600 });
  let bytes = 0;
  let tooLarge = false;
  const sink: StdoutSink = (chunk) => {
    bytes += chunk.length;
    if (bytes > MAX_BUNDLE_BYTES) tooLarge = true;
    if (!tooLarge) out.write(chunk);
  };
  // In the container, as the workspace's session: a hostile config there runs nowhere else.
  const command = [
    "git",
    ...(push.gitDir !== undefined ? [`--git-dir=${push.gitDir}`] : []),
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "bundle",
    "create",
    "--quiet",
    "-",
    `refs/heads/${push.src}`,
  ];
  let result: ContainerExecResult;
  try {
    result = await exec(command, sink, BUNDLE_TIMEOUT_MS);
  } finally {
    await new Promise<void>((resolve, reject) =>
      out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }
  if (tooLarge) throw new HostError("invalid", `the bundle of ${push.src} is over ${MAX_BUNDLE_BYTES} bytes`);
  if (result.timed_out) throw new HostError("exec_failed", `making the bundle of ${push.src} took too long`);
  if (result.exit_code !== 0) {
    const why = result.stderr.trim().slice(-1000) || `exit code ${result.exit_code}`;
    if (/unknown revision|bad revision|empty bundle/i.test(why))
      throw new HostError(
        "not_found",
        `the workspace has no branch ${push.src} to push (git bundle: ${why})`,
      );
    throw new HostError("exec_failed", `could not bundle branch ${push.src} in the workspace: ${why}`);
  }
}
