/**
 * From a repository to a pull request, against a real Docker Engine, a real git server on
 * loopback (git http-backend behind Basic auth) and a loopback forge speaking GitHub's and
 * GitLab's REST shapes: sessions on branches of their own, status / diff / commit run in the
 * container, pushes through the project's own repository on the host, the agent's own `git push`
 * through git-remote-oubliette, pull requests from the host with its token. A workspace full of
 * hostile git settings makes the host's git run nothing, and the token is never in a container.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import { createLogger } from "../../lib/log.js";
import { execAs } from "../support/docker-exec.js";
import { type FakeForge, startFakeForge } from "../support/fake-forge.js";
import { GitServer } from "../support/git-server.js";
import { ProjectHost, until } from "../support/project-host.js";
import { makeSshKey, SshGitServer, type SshKeyPair } from "../support/ssh-git-server.js";

const logger = createLogger({
  name: "git-workspaces-test",
  level: process.env.OUBLIETTE_LOG_LEVEL ?? "silent",
});
const run = process.pid.toString(16).padStart(8, "0");
const P = `prj_${run}${"7".padStart(16, "0")}`;
const session = (n: number) => `ses_${run}${n.toString(16).padStart(16, "0")}`;
const GIT_TOKEN = "ghp-test-0123456789-secret";
const WORKSPACE_ROOT = (host: ProjectHost) => join(host.dataDir, "projects", P, "volume", "workspaces");

let host: ProjectHost;
let server: GitServer;
let decoy: GitServer;
let forge: FakeForge;
let remote: string;
let sshServer: SshGitServer;
let sshRemote: string;
let deployKey: SshKeyPair;

type GitAnswer = Record<string, unknown> & { files?: { path: string; status: string }[]; diff?: string };
const git = (workspace_id: string, op: Record<string, unknown>) =>
  host.call<GitAnswer>("workspace_git", { project_id: P, workspace_id, ...op });

async function startSession(
  n: number,
  workspace: string,
  git: { remote_url: string; git_credential: string } = { remote_url: remote, git_credential: "forge" },
): Promise<string> {
  const id = session(n);
  await host.call("session_start", {
    session_id: id,
    project_id: P,
    workspace_id: workspace,
    project: { limits: { memory_mb: 1024 } },
    spec: {},
    git,
  });
  await until(() => host.worker.outputs(id).some((d) => d.op === "ready"), `${id} ready`);
  return id;
}

/** Runs an argv as a session's droid; its exit code and output. */
async function droidExec(id: string, seq: number, argv: string[]) {
  const [report] = (await host.steps(id, seq, [{ op: "exec", argv, timeout_ms: 60_000 }], "exec")).slice(-1);
  return report as { exit_code: number; stdout: string; stderr: string };
}

beforeAll(async () => {
  server = await GitServer.start({ auth: { username: "x-access-token", token: GIT_TOKEN } });
  decoy = await GitServer.start();
  forge = await startFakeForge({ token: GIT_TOKEN, repos: ["acme/app"] });
  remote = server.createRepo("acme/app", { "README.md": "upstream\n", "src/app.txt": "v1\n" });
  decoy.createRepo("acme/app", { "README.md": "decoy\n" });
  const keys = mkdtempSync(join(tmpdir(), "oub-git-keys-"));
  deployKey = makeSshKey(keys, "deploy");
  sshServer = await SshGitServer.start(deployKey.publicLine);
  sshRemote = sshServer.createRepo("app", { "README.md": "over ssh\n" });
  writeFileSync(join(keys, "known_hosts"), `${sshServer.knownHostsLine}\n`);
  host = await ProjectHost.start({
    logger,
    hostId: `git-test-${process.pid}`,
    credentials: {
      forge: { token: GIT_TOKEN, username: "x-access-token" },
      stale: { token: "not-the-token", username: "x-access-token" },
      deploy: { ssh_key_file: deployKey.privateFile, known_hosts_file: join(keys, "known_hosts") },
    },
  });
  await host.call("project_ensure", { project_id: P, spec: { limits: { memory_mb: 1024 } } });
  for (const [workspace_id, name] of [
    ["one", "oubliette/one"],
    ["two", "oubliette/two"],
  ] as const) {
    const made = await host.call("workspace_create", {
      project_id: P,
      workspace_id,
      remote_url: remote,
      git_credential: "forge",
      branch: { name },
    });
    expect(made).toMatchObject({
      git: "clone",
      branch: { name, base_commit: server.heads("acme/app").main },
    });
  }
}, 600_000);

afterAll(async () => {
  await host?.close([P]);
  await server?.close();
  await decoy?.close();
  await sshServer?.close();
  await forge?.close();
}, 120_000);

describe("sessions on branches of their own", () => {
  it("two sessions commit on two branches; each diff shows its own changes; both pushes land", async () => {
    const one = await startSession(1, "one");
    const two = await startSession(2, "two");
    await host.steps(one, 1, [{ op: "fs", action: "write", path: "one.txt", text: "from one\n" }], "fs");
    await host.steps(
      two,
      1,
      [{ op: "fs", action: "write", path: "src/app.txt", text: "v2 from two\n" }],
      "fs",
    );

    const status = await git("one", { op: "status" });
    expect(status).toMatchObject({ op: "status", branch: "oubliette/one", clean: false });
    expect(status.files).toEqual([{ path: "one.txt", status: "??" }]);

    const diffOne = await git("one", { op: "diff" });
    expect(diffOne.files).toEqual([{ path: "one.txt", status: "A" }]);
    expect(diffOne.diff).toContain("+from one");
    expect(diffOne.diff).not.toContain("v2 from two");
    const diffTwo = await git("two", { op: "diff" });
    expect(diffTwo.files).toEqual([{ path: "src/app.txt", status: "M" }]);
    expect(diffTwo.diff).toContain("-v1");
    expect(diffTwo.diff).toContain("+v2 from two");
    // The diff took nothing from the workspace's own index: the file is still untracked.
    expect((await git("one", { op: "status" })).files).toEqual([{ path: "one.txt", status: "??" }]);

    const committed = await git("one", {
      op: "commit",
      message: "Add one",
      author: { name: "Ada", email: "ada@example.com" },
    });
    expect(committed).toMatchObject({ committed: true, branch: "oubliette/one" });
    expect(await git("one", { op: "commit", message: "again" })).toMatchObject({ committed: false });
    expect((await git("two", { op: "commit", message: "Change app" })).committed).toBe(true);
    const log = await host.call<{ stdout: string }>("container_exec", {
      project_id: P,
      command: ["git", "log", "-1", "--format=%an <%ae> %s"],
      cwd: "/workspace/one",
    });
    expect(log.stdout.trim()).toBe("Ada <ada@example.com> Add one");
    // After the commit the diff against the base still shows the session's work, and nothing else.
    expect((await git("one", { op: "diff" })).files).toEqual([{ path: "one.txt", status: "A" }]);
    const capped = await git("two", { op: "diff", max_bytes: 10 });
    expect(capped).toMatchObject({ truncated: true });
    expect((capped.diff ?? "").length).toBeLessThanOrEqual(10);

    // Pushed without naming the branch: the workspace's own.
    const pushOne = await host.call("workspace_push", {
      project_id: P,
      workspace_id: "one",
      remote_url: remote,
      git_credential: "forge",
    });
    expect(pushOne).toEqual({ branch: "oubliette/one", commit: committed.commit, outcome: "created" });
    await host.call("workspace_push", {
      project_id: P,
      workspace_id: "two",
      remote_url: remote,
      git_credential: "forge",
    });
    const heads = server.heads("acme/app");
    expect(heads["oubliette/one"]).toBe(committed.commit);
    expect(heads["oubliette/two"]).toMatch(/^[0-9a-f]{40}$/);

    // The wrong token: refused by the server, said clearly.
    const refused = await host.failure("workspace_push", {
      project_id: P,
      workspace_id: "one",
      remote_url: remote,
      git_credential: "stale",
    });
    expect(refused?.reason).toBe("exec_failed");
    expect(refused?.message).toMatch(/401|Authentication failed|could not read/i);
  }, 300_000);

  it("the agent's own git push and fetch go through the host to the project's remote", async () => {
    await host.call("workspace_create", {
      project_id: P,
      workspace_id: "agent",
      remote_url: remote,
      git_credential: "forge",
      branch: { name: "oubliette/agent" },
    });
    const one = await startSession(3, "agent");
    const listed = await droidExec(one, 1, ["git", "ls-remote", "origin"]);
    expect(listed.exit_code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("refs/heads/main");
    const commit = await droidExec(one, 3, [
      "sh",
      "-c",
      "echo agent > agent.txt && git add agent.txt && git -c user.name=droid -c user.email=d@d commit -qm agent && git rev-parse HEAD",
    ]);
    expect(commit.exit_code, commit.stderr).toBe(0);
    const pushed = await droidExec(one, 4, ["git", "push", "origin", "HEAD:refs/heads/agent/one"]);
    expect(pushed.exit_code, pushed.stderr).toBe(0);
    expect(server.heads("acme/app")["agent/one"]).toBe(commit.stdout.trim());
    expect(host.worker.gitPushes(one)).toContainEqual({
      branch: "agent/one",
      commit: commit.stdout.trim(),
      outcome: "created",
      remote_url: remote,
    });
    // No force, and no other remote: the host serves the project's remote only.
    const forced = await droidExec(one, 5, ["git", "push", "--force", "origin", "HEAD:refs/heads/main"]);
    expect(forced.exit_code).not.toBe(0);
    expect(forced.stderr).toContain("force pushes are not allowed");
    const elsewhere = await droidExec(one, 6, [
      "git",
      "push",
      `oubliette::${decoy.url}/acme/app.git`,
      "HEAD:x",
    ]);
    expect(elsewhere.exit_code).not.toBe(0);
    expect(elsewhere.stderr).toContain("not this project's remote");
    expect(decoy.seen).toEqual([]);
    // Work another workspace pushed reaches the agent with its own git fetch, through the host.
    await host.call("workspace_create", {
      project_id: P,
      workspace_id: "peer",
      remote_url: remote,
      git_credential: "forge",
      branch: { name: "oubliette/peer" },
    });
    await host.call("container_exec", {
      project_id: P,
      command: ["sh", "-c", "echo peer > peer.txt"],
      cwd: "/workspace/peer",
    });
    const peerCommit = await git("peer", { op: "commit", message: "peer" });
    await host.call("workspace_push", {
      project_id: P,
      workspace_id: "peer",
      remote_url: remote,
      git_credential: "forge",
    });
    const fetched = await droidExec(one, 7, [
      "sh",
      "-c",
      "git fetch -q origin oubliette/peer && git rev-parse FETCH_HEAD && git show FETCH_HEAD:peer.txt",
    ]);
    expect(fetched.exit_code, fetched.stderr).toBe(0);
    expect(fetched.stdout.split("\n").slice(0, 2)).toEqual([peerCommit.commit, "peer"]);
    // The agent's environment names the route through the host, never the token.
    const env = await droidExec(one, 8, ["env"]);
    expect(env.stdout).toContain(`url.oubliette::${remote}.insteadOf`);
    expect(env.stdout).not.toContain(GIT_TOKEN);
  }, 300_000);
});

describe("a remote over ssh:// with a deploy key", () => {
  it("clones with the key; the agent's git push and the workspace push land over ssh", async () => {
    const made = await host.call("workspace_create", {
      project_id: P,
      workspace_id: "ssh",
      remote_url: sshRemote,
      git_credential: "deploy",
      branch: { name: "oubliette/ssh" },
    });
    expect(made).toMatchObject({
      git: "clone",
      branch: { name: "oubliette/ssh", base_commit: sshServer.heads("app").main },
    });
    const id = await startSession(9, "ssh", { remote_url: sshRemote, git_credential: "deploy" });
    const commit = await droidExec(id, 1, [
      "sh",
      "-c",
      "cat README.md && echo ssh > ssh.txt && git add ssh.txt && git -c user.name=droid -c user.email=d@d commit -qm ssh && git rev-parse HEAD",
    ]);
    expect(commit.exit_code, commit.stderr).toBe(0);
    expect(commit.stdout.startsWith("over ssh\n")).toBe(true);
    const pushed = await droidExec(id, 2, ["git", "push", "origin", "HEAD:refs/heads/agent/ssh"]);
    expect(pushed.exit_code, pushed.stderr).toBe(0);
    const head = commit.stdout.trim().split("\n").at(-1);
    expect(sshServer.heads("app")["agent/ssh"]).toBe(head);
    const result = await host.call("workspace_push", {
      project_id: P,
      workspace_id: "ssh",
      remote_url: sshRemote,
      git_credential: "deploy",
    });
    expect(result).toMatchObject({ branch: "oubliette/ssh", commit: head, outcome: "created" });
    expect(sshServer.heads("app")["oubliette/ssh"]).toBe(head);
    // Every connection the server let in came with the deploy key, from the host.
    expect(sshServer.seen.length).toBeGreaterThan(0);
    expect(sshServer.seen.every((s) => s.accepted && s.key === deployKey.publicLine.split(" ")[1])).toBe(
      true,
    );
  }, 300_000);
});

describe("pull requests", () => {
  const request = (extra: Record<string, unknown>) =>
    host.call<{ url: string; number: number; head: string; base: string }>("workspace_pull_request", {
      project_id: P,
      remote_url: remote,
      git_credential: "forge",
      title: "Add one",
      body: "What the session did.",
      ...extra,
    });

  it("opens a GitHub pull request for the workspace's branch, into the remote's default branch", async () => {
    const opened = await request({
      workspace_id: "one",
      forge: { kind: "github", api_url: `${forge.url}/api/v3` },
    });
    expect(opened).toEqual({
      url: `${forge.url}/acme/app/pull/${opened.number}`,
      number: opened.number,
      head: "oubliette/one",
      base: "main",
    });
    const sent = forge.requests.at(-1);
    expect(sent).toMatchObject({ method: "POST", path: "/api/v3/repos/acme/app/pulls" });
    expect(sent?.headers.authorization).toBe(`Bearer ${GIT_TOKEN}`);
    expect(sent?.body).toEqual({
      title: "Add one",
      head: "oubliette/one",
      base: "main",
      body: "What the session did.",
      draft: false,
    });
    // The same again: the forge's refusal, passed on.
    const again = await host.failure("workspace_pull_request", {
      project_id: P,
      workspace_id: "one",
      remote_url: remote,
      git_credential: "forge",
      forge: { kind: "github", api_url: `${forge.url}/api/v3` },
      title: "Add one",
    });
    expect(again?.reason).toBe("rejected");
    expect(again?.message).toContain("422");
    expect(again?.message).not.toContain(GIT_TOKEN);
  }, 120_000);

  it("opens a GitLab merge request, a draft", async () => {
    const opened = await request({
      workspace_id: "two",
      forge: { kind: "gitlab", api_url: `${forge.url}/api/v4` },
      draft: true,
      base: "main",
    });
    expect(opened.url).toBe(`${forge.url}/acme/app/-/merge_requests/${opened.number}`);
    const sent = forge.requests.at(-1);
    expect(sent).toMatchObject({ method: "POST", path: "/api/v4/projects/acme%2Fapp/merge_requests" });
    expect(sent?.headers["private-token"]).toBe(GIT_TOKEN);
    expect(sent?.body).toMatchObject({
      source_branch: "oubliette/two",
      target_branch: "main",
      title: "Draft: Add one",
    });
  }, 120_000);
});

describe("a hostile workspace", () => {
  it("makes the host's git run nothing: status, diff, commit, push and pull_request leave no marker, send nothing elsewhere", async () => {
    const made = await host.call("workspace_create", {
      project_id: P,
      workspace_id: "evil",
      remote_url: remote,
      git_credential: "forge",
      branch: { name: "oubliette/evil" },
    });
    expect(made).toMatchObject({ branch: { name: "oubliette/evil" } });
    const marker = join(tmpdir(), `oub-git-marker-${process.pid}-${Date.now()}`);
    const inEvil = (command: string[]) =>
      host.call<{ exit_code: number; stderr: string }>("container_exec", {
        project_id: P,
        command,
        cwd: "/workspace/evil",
      });
    const hostile: Record<string, string> = {
      "core.fsmonitor": `touch ${marker}-fsmonitor`,
      "core.hooksPath": "/workspace/evil/.hooks",
      "core.sshCommand": `touch ${marker}-ssh`,
      "core.pager": `touch ${marker}-pager`,
      "credential.helper": `!touch ${marker}-credential`,
      [`url.${decoy.url}/.insteadOf`]: `${server.url}/`,
      "include.path": "/workspace/evil/.included",
      "gpg.program": `touch ${marker}-gpg`,
      "commit.gpgSign": "true",
      "filter.evil.clean": `touch ${marker}-filter`,
      "filter.evil.smudge": `touch ${marker}-filter`,
      "diff.evil.textconv": `touch ${marker}-textconv`,
      "diff.external": `touch ${marker}-diff-external`,
    };
    for (const [key, value] of Object.entries(hostile))
      expect((await inEvil(["git", "config", key, value])).exit_code).toBe(0);
    const plant = `set -e
      mkdir -p .hooks
      for h in pre-push reference-transaction post-checkout pre-commit commit-msg post-commit; do
        printf '#!/bin/sh\\ntouch ${marker}-hook-%s\\n' "$h" > .hooks/$h; chmod +x .hooks/$h
        printf '#!/bin/sh\\ntouch ${marker}-githook-%s\\n' "$h" > .git/hooks/$h; chmod +x .git/hooks/$h
      done
      printf '[core]\\n\\tfsmonitor = touch ${marker}-included\\n' > .included
      printf '* filter=evil diff=evil\\n' > .gitattributes
      git init -q --bare embedded.git
      mkdir -p embedded.git/hooks
      git --git-dir=embedded.git config core.fsmonitor 'touch ${marker}-embedded'
      printf '#!/bin/sh\\ntouch ${marker}-embedded-hook\\n' > embedded.git/hooks/pre-push; chmod +x embedded.git/hooks/pre-push
      echo change > evil.txt`;
    const planted = await inEvil(["sh", "-c", plant]);
    expect(planted.exit_code, planted.stderr).toBe(0);

    await git("evil", { op: "status" });
    const diff = await git("evil", { op: "diff" });
    expect(diff.files?.map((f) => f.path)).toContain("evil.txt");
    const committed = await git("evil", { op: "commit", message: "evil" });
    expect(committed).toMatchObject({ committed: true });
    expect(
      await host.call("workspace_push", {
        project_id: P,
        workspace_id: "evil",
        remote_url: remote,
        git_credential: "forge",
      }),
    ).toMatchObject({ branch: "oubliette/evil", outcome: "created" });
    expect(server.heads("acme/app")["oubliette/evil"]).toBe(committed.commit);
    await host.call("workspace_pull_request", {
      project_id: P,
      workspace_id: "evil",
      remote_url: remote,
      git_credential: "forge",
      forge: { kind: "github", api_url: `${forge.url}/api/v3` },
      title: "Evil",
    });

    const markers = readdirSync(tmpdir()).filter((name) => name.startsWith(`oub-git-marker-${process.pid}`));
    expect(markers).toEqual([]);
    expect(decoy.seen).toEqual([]);
    // The project's repository on the host is the host's: nothing of the workspace's config in it.
    const repoConfig = join(host.dataDir, "projects", P, "git", "repo.git", "config");
    expect(existsSync(repoConfig)).toBe(true);
    expect(existsSync(join(WORKSPACE_ROOT(host), "evil", "embedded.git"))).toBe(true);
  }, 300_000);

  it("never puts the token or the deploy key in a container: not its environment, files, homes or git config", async () => {
    const [info] = await host.docker.listContainers({ filters: { label: [`${PROJECT_LABEL}=${P}`] } });
    const container = host.docker.getContainer(info?.Id ?? "");
    expect(JSON.stringify((await container.inspect()).Config.Env)).not.toContain(GIT_TOKEN);
    const basic = Buffer.from(`x-access-token:${GIT_TOKEN}`).toString("base64");
    // A line from the middle of the private key: its secret part.
    const keyLine = readFileSync(deployKey.privateFile, "utf8").split("\n")[2] ?? "";
    expect(keyLine.length).toBeGreaterThan(40);
    for (const needle of [GIT_TOKEN, basic, keyLine]) {
      const grep = await execAs(container, "0", [
        "grep",
        "-r",
        "-l",
        "-s",
        "-F",
        needle,
        "/workspace",
        "/home",
        "/tmp",
        "/etc",
        "/proc/1/environ",
      ]);
      expect(grep.out.trim(), `found in ${grep.out}`).toBe("");
    }
  }, 120_000);
});
