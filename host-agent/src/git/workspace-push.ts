/**
 * A workspace's branch to the project's remote, without the host ever running git in the
 * workspace (docs/git.md): the container makes a bundle of the branch (`git bundle create`, run
 * as the exec identity, its bytes streamed straight into a host-owned file), the project's own
 * repository on the host verifies and takes it, and pushes it from there.
 */
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ContainerExecParams, ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { StdoutSink } from "../runtime/types.js";
import { checkBranch, type ProjectRepo, type PushResult } from "./project-repo.js";

/** The largest bundle taken from a workspace. */
const MAX_BUNDLE_BYTES = 1024 * 1024 * 1024;
const BUNDLE_TIMEOUT_MS = 300_000;

export interface BundleSource {
  /** Runs a command in the project's container (see ProjectRuntime.exec). */
  exec(params: ContainerExecParams, signal?: AbortSignal, stdout?: StdoutSink): Promise<ContainerExecResult>;
}

export interface WorkspacePush {
  projectId: string;
  /** The workspace's directory in the container. */
  workspacePath: string;
  branch: string;
  remoteUrl: string;
  credential?: string | undefined;
}

export async function pushWorkspace(
  source: BundleSource,
  repo: ProjectRepo,
  incoming: string,
  push: WorkspacePush,
): Promise<PushResult> {
  checkBranch(push.branch);
  await mkdir(incoming, { recursive: true, mode: 0o700 });
  const file = join(incoming, `${randomUUID()}.bundle`);
  try {
    await bundleInto(source, push, file);
    await repo.importBundle(file, push.branch);
    return await repo.push(push.remoteUrl, push.branch, push.credential);
  } finally {
    await rm(file, { force: true });
  }
}

/** Streams `git bundle create - refs/heads/<branch>` of the workspace into `file`. */
async function bundleInto(source: BundleSource, push: WorkspacePush, file: string): Promise<void> {
  const out = createWriteStream(file, { mode: 0o600 });
  let bytes = 0;
  let tooLarge = false;
  const sink: StdoutSink = (chunk) => {
    bytes += chunk.length;
    if (bytes > MAX_BUNDLE_BYTES) tooLarge = true;
    if (!tooLarge) out.write(chunk);
  };
  let result: ContainerExecResult;
  try {
    result = await source.exec(
      {
        project_id: push.projectId,
        // In the container, as the exec identity: a hostile config there runs nowhere else.
        command: [
          "git",
          "-c",
          "core.fsmonitor=false",
          "-c",
          "core.hooksPath=/dev/null",
          "bundle",
          "create",
          "--quiet",
          "-",
          `refs/heads/${push.branch}`,
        ],
        cwd: push.workspacePath,
        timeout_ms: BUNDLE_TIMEOUT_MS,
        output_limit_bytes: 16 * 1024,
      },
      undefined,
      sink,
    );
  } finally {
    await new Promise<void>((resolve, reject) =>
      out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }
  if (tooLarge)
    throw new HostError("invalid", `the bundle of ${push.branch} is over ${MAX_BUNDLE_BYTES} bytes`);
  if (result.timed_out)
    throw new HostError("exec_failed", `making the bundle of ${push.branch} took too long`);
  if (result.exit_code !== 0) {
    const why = result.stderr.trim().slice(-1000) || `exit code ${result.exit_code}`;
    if (/unknown revision|bad revision|empty bundle/i.test(why))
      throw new HostError(
        "not_found",
        `the workspace has no branch ${push.branch} to push (git bundle: ${why})`,
      );
    throw new HostError("exec_failed", `could not bundle branch ${push.branch} in the workspace: ${why}`);
  }
}
