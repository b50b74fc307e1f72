/**
 * SSH deploy keys: a project's remote over ssh://, reached by the host's git with a key the host
 * holds (docs/git.md). A real SSH server on loopback (test/support/ssh-git-server.ts) runs git's
 * own upload-pack and receive-pack and lets in one key; the client is the system's OpenSSH, run
 * by the host-agent's git code. The clone, ls-remote, fetch and push work with the deploy key and
 * leave no trace of it in the repository; a wrong key, an unknown host key, or a credential of
 * the wrong kind fail saying why; and the credentials file is checked when it is loaded. (That
 * such a run reads none of the host user's ssh setup is test/unit/ssh-command.test.ts: ssh finds
 * that setup from the password database, which a test cannot point elsewhere.)
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GitCredential, GitCredentials } from "../../host-agent/src/git/git-credentials.js";
import { ProjectRepo } from "../../host-agent/src/git/project-repo.js";
import { gitClone, type HostGitSettings } from "../../host-agent/src/projects/git.js";
import { git } from "../support/git-server.js";
import { makeSshKey, SshGitServer, type SshKeyPair } from "../support/ssh-git-server.js";

let scratch: string;
let deployKey: SshKeyPair;
let otherKey: SshKeyPair;
let server: SshGitServer;
let url: string;
let knownHosts: string;

function settings(credentials: Record<string, GitCredential>): HostGitSettings {
  return {
    policy: { allowLocal: true },
    credentials: new GitCredentials(new Map(Object.entries(credentials))),
  };
}

let local: HostGitSettings;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "oub-git-ssh-"));
  deployKey = makeSshKey(scratch, "deploy");
  otherKey = makeSshKey(scratch, "other");
  server = await SshGitServer.start(deployKey.publicLine);
  url = server.createRepo("private", { "README.md": "a private repository over ssh\n" });
  knownHosts = join(scratch, "known_hosts");
  writeFileSync(knownHosts, `${server.knownHostsLine}\n`);
  local = settings({
    deploy: { ssh_key_file: deployKey.privateFile, known_hosts_file: knownHosts },
    "deploy-and-token": {
      ssh_key_file: deployKey.privateFile,
      known_hosts_file: knownHosts,
      token: "glpat-api",
    },
    other: { ssh_key_file: otherKey.privateFile, known_hosts_file: knownHosts },
    token: { token: "ghp_not_a_key" },
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Every file under `dir` (the .git directory included). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe("a project's remote over ssh:// with a deploy key", () => {
  it("clones with the key, which the server saw and which appears nowhere in the clone", async () => {
    const dir = join(scratch, "clone");
    const before = server.seen.length;
    await gitClone(url, dir, local, "deploy");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("a private repository over ssh\n");
    const accepted = server.seen.slice(before).filter((s) => s.accepted);
    expect(accepted).toEqual([{ user: "git", key: deployKey.publicLine.split(" ")[1], accepted: true }]);
    expect(server.commands.at(-1)).toBe("git-upload-pack '/private.git'");
    const secret = readFileSync(deployKey.privateFile, "utf8");
    const body = secret.split("\n")[1] ?? "";
    expect(body.length).toBeGreaterThan(20);
    for (const file of files(dir)) {
      const content = readFileSync(file, "latin1");
      expect(content.includes(body), file).toBe(false);
      expect(content.includes(deployKey.privateFile), file).toBe(false);
    }
    const config = readFileSync(join(dir, ".git", "config"), "utf8");
    expect(config).toContain(`url = ${url}`);
    expect(config).not.toMatch(/sshCommand/i);
  });

  it("lists, fetches and pushes from the project's repository with the key", async () => {
    const repo = new ProjectRepo(join(scratch, "project", "repo.git"), local);
    const refs = await repo.remoteRefs(url, "deploy");
    expect(refs.head).toBe("main");
    expect(refs.refs.map((r) => r.name)).toEqual(["refs/heads/main"]);

    const bundle = join(scratch, "fetched.bundle");
    await repo.fetchBundle(url, "deploy", ["main"], bundle);
    expect(git(scratch, "bundle", "list-heads", bundle)).toContain("refs/oubliette/fetched/main");

    // A branch made in a workspace arrives as a bundle; the host pushes it over ssh.
    const work = join(scratch, "work");
    git(scratch, "init", "--quiet", "--initial-branch=feature", work);
    git(work, "fetch", "--quiet", bundle, "refs/oubliette/fetched/main:refs/heads/base");
    git(work, "reset", "--quiet", "--hard", "base");
    writeFileSync(join(work, "feature.txt"), "made in a session\n");
    git(work, "add", "-A");
    git(work, "commit", "--quiet", "-m", "a feature");
    const made = join(scratch, "feature.bundle");
    git(work, "bundle", "create", "--quiet", made, "feature");
    const commit = await repo.importBundle(made, "feature");
    const pushed = await repo.push(url, "feature", "deploy");
    expect(pushed).toEqual({ branch: "feature", commit, outcome: "created" });
    expect(server.heads("private").feature).toBe(commit);
    expect(server.commands.at(-1)).toBe("git-receive-pack '/private.git'");
  });

  it("a push the remote refuses (not a fast-forward) is a rejection saying so", async () => {
    const repo = new ProjectRepo(join(scratch, "project", "repo.git"), local);
    const work = join(scratch, "rewrite");
    git(scratch, "init", "--quiet", "--initial-branch=feature", work);
    writeFileSync(join(work, "other.txt"), "unrelated history\n");
    git(work, "add", "-A");
    git(work, "commit", "--quiet", "-m", "unrelated");
    const made = join(scratch, "rewrite.bundle");
    git(work, "bundle", "create", "--quiet", made, "feature");
    await repo.importBundle(made, "feature");
    const attempt = repo.push(url, "feature", "deploy");
    await expect(attempt).rejects.toMatchObject({ reason: "rejected" });
    await expect(attempt).rejects.toThrow(/refused the push of feature: .*(fetch first|non-fast-forward)/);
  });

  it("a key the server does not know is refused, saying so", async () => {
    const before = server.seen.length;
    const attempt = gitClone(url, join(scratch, "other-key"), local, "other");
    await expect(attempt).rejects.toMatchObject({ reason: "exec_failed" });
    await expect(attempt).rejects.toThrow(/Permission denied \(publickey\)/);
    const offered = server.seen.slice(before).filter((s) => s.key !== null);
    expect(offered.length).toBeGreaterThan(0);
    expect(offered.every((s) => s.key === otherKey.publicLine.split(" ")[1] && !s.accepted)).toBe(true);
  });

  it("a server whose host key is not the known one is never authenticated to", async () => {
    const impostor = await SshGitServer.start(deployKey.publicLine);
    try {
      const impostorUrl = impostor.createRepo("private", { "README.md": "an impostor\n" });
      // The known key is the real server's, listed for the impostor's address and port.
      const wrongHosts = join(scratch, "wrong_known_hosts");
      const [, type, blob] = server.knownHostsLine.split(" ");
      writeFileSync(wrongHosts, `[127.0.0.1]:${impostor.port} ${type} ${blob}\n`);
      const attempt = gitClone(
        impostorUrl,
        join(scratch, "impostor"),
        settings({ deploy: { ssh_key_file: deployKey.privateFile, known_hosts_file: wrongHosts } }),
        "deploy",
      );
      await expect(attempt).rejects.toThrow(
        /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/,
      );
      expect(impostor.seen).toEqual([]);
      expect(impostor.commands).toEqual([]);
    } finally {
      await impostor.close();
    }
  });

  it("a credential of the wrong kind for the remote is refused before git runs", async () => {
    const before = server.seen.length;
    await expect(gitClone(url, join(scratch, "token-over-ssh"), local, "token")).rejects.toThrow(
      "git credential token is an HTTPS token; an ssh:// remote needs an ssh_key_file",
    );
    await expect(
      gitClone("http://127.0.0.1:9/private.git", join(scratch, "key-over-http"), local, "deploy"),
    ).rejects.toThrow("git credential deploy is an SSH key; a http:// remote needs a token");
    expect(server.seen.length).toBe(before);
  });

  it("a forge's API needs the credential's token: a key alone is refused, a key with a token serves", () => {
    expect(() => local.credentials.tokenFor("deploy")).toThrow(
      "git credential deploy holds only an SSH key; the forge's API needs a token: add one to it",
    );
    expect(local.credentials.tokenFor("deploy-and-token")).toBe("glpat-api");
  });
});

describe("the credentials file's SSH entries", () => {
  function load(entries: unknown): GitCredentials {
    const file = join(scratch, `credentials-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(entries));
    return GitCredentials.load(file);
  }

  it("loads a deploy key with its known hosts, and names it without its secret", () => {
    const loaded = load({ deploy: { ssh_key_file: deployKey.privateFile, known_hosts_file: knownHosts } });
    expect(loaded.names()).toEqual(["deploy"]);
  });

  it("refuses a key other users can read, as ssh would", () => {
    const open = join(scratch, "open-key");
    writeFileSync(open, readFileSync(deployKey.privateFile));
    chmodSync(open, 0o644);
    expect(() => load({ deploy: { ssh_key_file: open } })).toThrow(
      `invalid git credentials file: deploy: ${open} can be read by other users (mode 644); chmod 600 it`,
    );
  });

  it("refuses a key file that is not there, a relative path, and an entry with no secret", () => {
    const missing = join(scratch, "missing-key");
    expect(() => load({ deploy: { ssh_key_file: missing } })).toThrow(
      `invalid git credentials file: deploy: cannot read ${missing}: ENOENT`,
    );
    expect(() => load({ deploy: { ssh_key_file: "keys/deploy" } })).toThrow(
      "invalid git credentials file: deploy.ssh_key_file is not an absolute path without spaces, quotes or %",
    );
    expect(() => load({ deploy: { username: "git" } })).toThrow(
      "invalid git credentials file: deploy a credential needs a token, an ssh_key_file, or both",
    );
    expect(() => load({ deploy: { token: "t", known_hosts_file: knownHosts } })).toThrow(
      "known_hosts_file goes with an ssh_key_file",
    );
    expect(() => load({ deploy: { ssh_key: "-----BEGIN" } })).toThrow(/invalid git credentials file/);
    expect(() => load({ deploy: { ssh_key_file: "/keys/my key" } })).toThrow(
      "invalid git credentials file: deploy.ssh_key_file is not an absolute path without spaces, quotes or %",
    );
  });
});

describe("the credentials file, malformed", () => {
  it("is refused without quoting any of it (it holds tokens)", () => {
    const file = join(scratch, "broken.json");
    writeFileSync(file, '{"forge": {"token": "ghp_SECRET_TOKEN_VALUE" oops}}');
    let message = "";
    try {
      GitCredentials.load(file);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe("the git credentials file is not JSON");
    expect(() => GitCredentials.load(join(scratch, "absent.json"))).toThrow(
      "cannot read the git credentials file: ENOENT",
    );
  });
});
