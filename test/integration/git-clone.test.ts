/**
 * The host's git clone of a project's remote: a real git server on loopback (git http-backend
 * behind Basic auth, test/support/git-server.ts) and the host-agent's own clone code. A private
 * repository clones with the host's named credential, which ends up nowhere in the clone; without
 * it, or with a name the host does not hold, the clone fails saying why; the default policy
 * refuses loopback, http:// and file:// remotes before git runs; and the host user's own git
 * config (an `insteadOf` that would send the credential elsewhere) is never read.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitCredentials } from "../../host-agent/src/git/git-credentials.js";
import { gitClone, type HostGitSettings } from "../../host-agent/src/projects/git.js";
import { GitServer } from "../support/git-server.js";

const TOKEN = "ghp_test0123456789abcdefTOKEN";
const USER = "x-access-token";

let server: GitServer;
let decoy: GitServer;
let scratch: string;
let url: string;

const credentials = new GitCredentials(new Map([["test-forge", { token: TOKEN, username: USER }]]));
const local: HostGitSettings = { policy: { allowLocal: true }, credentials };

beforeAll(async () => {
  server = await GitServer.start({ auth: { username: USER, token: TOKEN } });
  decoy = await GitServer.start();
  url = server.createRepo("private", { "README.md": "a private repository\n" });
  decoy.createRepo("private", { "README.md": "the decoy\n" });
  scratch = mkdtempSync(join(tmpdir(), "oub-git-clone-"));
});

afterAll(async () => {
  await server?.close();
  await decoy?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Every file under `dir` (the .git directory included). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe("cloning a project's remote on the host", () => {
  it("clones a private repository with the host's credential, which appears nowhere in the clone", async () => {
    const dir = join(scratch, "with-credential");
    await gitClone(url, dir, local, "test-forge");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("a private repository\n");
    const basic = Buffer.from(`${USER}:${TOKEN}`).toString("base64");
    for (const file of files(dir)) {
      const content = readFileSync(file, "latin1");
      expect(content.includes(TOKEN), file).toBe(false);
      expect(content.includes(basic), file).toBe(false);
    }
    expect(readFileSync(join(dir, ".git", "config"), "utf8")).toContain(`url = ${url}`);
    // The server saw the credential (the clone needed it).
    expect(server.seen.some((r) => r.authorization === `Basic ${basic}`)).toBe(true);
  });

  it("without a credential the private clone fails, saying so", async () => {
    const attempt = gitClone(url, join(scratch, "anonymous"), local);
    await expect(attempt).rejects.toMatchObject({ reason: "exec_failed" });
    await expect(attempt).rejects.toThrow(/git clone failed/);
  });

  it("a credential the host does not hold is refused before git runs, naming the ones it has", async () => {
    const before = server.seen.length;
    const attempt = gitClone(url, join(scratch, "unknown"), local, "github-acme");
    await expect(attempt).rejects.toMatchObject({ reason: "invalid" });
    await expect(attempt).rejects.toThrow(
      "this host has no git credential named github-acme (it has test-forge)",
    );
    expect(server.seen.length).toBe(before);
  });

  it("by default refuses http://, loopback and file:// remotes before git runs", async () => {
    const strict: HostGitSettings = { policy: { allowLocal: false }, credentials };
    const before = server.seen.length;
    for (const remote of [url, url.replace("http://", "https://"), `file://${server.root}/private.git`]) {
      const attempt = gitClone(remote, join(scratch, "refused"), strict, "test-forge");
      await expect(attempt).rejects.toMatchObject({ reason: "invalid" });
      await expect(attempt).rejects.toThrow(/is refused/);
    }
    expect(server.seen.length).toBe(before);
  });

  it("never reads the host user's git config: an insteadOf there sends nothing to another server", async () => {
    const home = join(scratch, "hostile-home");
    mkdirSync(home, { recursive: true });
    const config = join(home, ".gitconfig");
    writeFileSync(config, `[url "${decoy.url}/"]\n\tinsteadOf = ${server.url}/\n`);
    const saved = { HOME: process.env.HOME, GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL };
    process.env.HOME = home;
    process.env.GIT_CONFIG_GLOBAL = config;
    try {
      const dir = join(scratch, "not-redirected");
      await gitClone(url, dir, local, "test-forge");
      expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("a private repository\n");
    } finally {
      process.env.HOME = saved.HOME;
      if (saved.GIT_CONFIG_GLOBAL === undefined) delete process.env.GIT_CONFIG_GLOBAL;
      else process.env.GIT_CONFIG_GLOBAL = saved.GIT_CONFIG_GLOBAL;
    }
    expect(decoy.seen).toEqual([]);
  });
});
