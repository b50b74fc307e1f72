/**
 * A project's repository on the host (docs/git.md): bare, owned by the host, in the project's
 * data directory (never in its volume, which the container can write), and the only repository
 * the host's git ever runs in. Work arrives from a workspace as a bundle the container made
 * (pure data: `git bundle verify` checks it, a fetch takes its one branch); pushes to the
 * project's remote go from here, with the host's credential for that run only.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { z } from "zod";
import { GitBranchSchema, type WorkspacePushResultSchema } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { HostGitSettings } from "../projects/git.js";
import { runGit } from "./git-run.js";
import { checkRemote } from "./remote-policy.js";

const LOCAL_TIMEOUT_MS = 60_000;
const PUSH_TIMEOUT_MS = 120_000;

export function checkBranch(branch: string): void {
  if (!GitBranchSchema.safeParse(branch).success)
    throw new HostError("invalid", `${JSON.stringify(branch)} is not a branch name this host pushes`);
}

/** A pushed branch, its commit, and what the remote said of it (the tunnel's answer). */
export type PushResult = z.infer<typeof WorkspacePushResultSchema>;

export class ProjectRepo {
  constructor(
    /** `<data-dir>/projects/<id>/git/repo.git`. */
    readonly dir: string,
    readonly git: HostGitSettings,
  ) {}

  /** Creates the bare repository the first time. */
  async ensure(): Promise<void> {
    if (existsSync(join(this.dir, "HEAD"))) return;
    await mkdir(dirname(this.dir), { recursive: true, mode: 0o700 });
    await runGit(["init", "--quiet", "--bare", "--", this.dir], LOCAL_TIMEOUT_MS, { protocols: [] });
  }

  /**
   * Takes branch `src` from a bundle file (one the container made of its workspace): verified
   * first, then fetched into branch `branch` here, replacing it (the workspace's branch is the
   * truth). Returns the commit.
   */
  async importBundle(bundle: string, branch: string, src = branch): Promise<string> {
    checkBranch(branch);
    checkBranch(src);
    await this.ensure();
    const gitDir = `--git-dir=${this.dir}`;
    await runGit([gitDir, "bundle", "verify", "--quiet", "--", bundle], LOCAL_TIMEOUT_MS, {
      protocols: ["file"],
    }).catch((error: unknown) => {
      throw new HostError("invalid", `the workspace's bundle of ${branch} is not a valid git bundle`, {
        cause: error,
      });
    });
    await runGit(
      [
        gitDir,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--",
        bundle,
        `+refs/heads/${src}:refs/heads/${branch}`,
      ],
      LOCAL_TIMEOUT_MS,
      { protocols: ["file"] },
    );
    const { stdout } = await runGit(
      [gitDir, "rev-parse", "--verify", `refs/heads/${branch}^{commit}`],
      LOCAL_TIMEOUT_MS,
      {
        protocols: [],
      },
    );
    return stdout.trim();
  }

  /** The remote's branches and default branch (`git ls-remote`, with the credential for that run). */
  async remoteRefs(remoteUrl: string, credential: string | undefined): Promise<RemoteRefs> {
    const remote = await checkRemote(remoteUrl, this.git.policy);
    const config = credential === undefined ? [] : this.git.credentials.configFor(credential, remote);
    await this.ensure();
    const { stdout } = await runGit(
      [`--git-dir=${this.dir}`, "ls-remote", "--symref", "--", remoteUrl, "HEAD", "refs/heads/*"],
      PUSH_TIMEOUT_MS,
      { protocols: [remote.protocol], config },
    );
    return parseLsRemote(stdout);
  }

  /**
   * Fetches `branches` of the remote here (under refs/oubliette/fetched/, with the credential for
   * that run) and writes a bundle of them to `file`, for a container that has no network.
   */
  async fetchBundle(
    remoteUrl: string,
    credential: string | undefined,
    branches: string[],
    file: string,
  ): Promise<void> {
    for (const branch of branches) checkBranch(branch);
    const remote = await checkRemote(remoteUrl, this.git.policy);
    const config = credential === undefined ? [] : this.git.credentials.configFor(credential, remote);
    await this.ensure();
    const gitDir = `--git-dir=${this.dir}`;
    const refs = branches.map((b) => `refs/oubliette/fetched/${b}`);
    await runGit(
      [
        gitDir,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--",
        remoteUrl,
        ...branches.map((b, i) => `+refs/heads/${b}:${refs[i]}`),
      ],
      PUSH_TIMEOUT_MS,
      { protocols: [remote.protocol], config },
    );
    await runGit([gitDir, "bundle", "create", "--quiet", file, ...refs], PUSH_TIMEOUT_MS, { protocols: [] });
  }

  /** Pushes `branch` to `remoteUrl` (checked by the host's policy) with the named credential. */
  async push(remoteUrl: string, branch: string, credential: string | undefined): Promise<PushResult> {
    checkBranch(branch);
    const remote = await checkRemote(remoteUrl, this.git.policy);
    const config = credential === undefined ? [] : this.git.credentials.configFor(credential, remote);
    const ref = `refs/heads/${branch}`;
    const commit = (
      await runGit([`--git-dir=${this.dir}`, "rev-parse", "--verify", `${ref}^{commit}`], LOCAL_TIMEOUT_MS, {
        protocols: [],
      })
    ).stdout.trim();
    const run = runGit(
      [`--git-dir=${this.dir}`, "push", "--porcelain", "--no-verify", "--", remoteUrl, `${ref}:${ref}`],
      PUSH_TIMEOUT_MS,
      { protocols: [remote.protocol], config },
    );
    const { stdout } = await run.catch((error: unknown) => {
      const out = (error as { stdout?: string }).stdout ?? "";
      const rejected = porcelainLine(out, ref);
      if (rejected?.flag === "!")
        throw new HostError("rejected", `the remote refused the push of ${branch}: ${rejected.summary}`, {
          cause: error,
        });
      throw error;
    });
    const line = porcelainLine(stdout, ref);
    const outcome = line?.flag === "*" ? "created" : line?.flag === "=" ? "up_to_date" : "updated";
    return { branch, commit, outcome };
  }
}

/** What a remote has: its branches and the branch its HEAD names. */
export interface RemoteRefs {
  refs: { name: string; oid: string }[];
  head: string | null;
}

/** Reads `git ls-remote --symref` output: `ref: refs/heads/main\tHEAD`, then `<oid>\t<ref>` lines. */
export function parseLsRemote(out: string): RemoteRefs {
  const refs: RemoteRefs["refs"] = [];
  let head: string | null = null;
  for (const line of out.split("\n")) {
    const [left, name] = line.split("\t");
    if (left === undefined || name === undefined) continue;
    if (left.startsWith("ref: ") && name === "HEAD") {
      head = left.slice(5).replace(/^refs\/heads\//, "");
      continue;
    }
    if (/^[0-9a-f]{40,64}$/.test(left) && name.startsWith("refs/heads/") && refs.length < 10_000)
      refs.push({ name, oid: left });
  }
  return { refs, head };
}

/** The porcelain status line of `ref` (`<flag>\t<from>:<to>\t<summary>`). */
function porcelainLine(out: string, ref: string): { flag: string; summary: string } | null {
  for (const line of out.split("\n")) {
    const [flag, refs, summary] = line.split("\t");
    if (flag !== undefined && refs?.endsWith(`:${ref}`))
      return { flag: flag.trim() || " ", summary: summary ?? "" };
  }
  return null;
}
