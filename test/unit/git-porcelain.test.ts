/** Reading what git printed in a container: status and name-status output, bounded and tolerant. */
import { describe, expect, it } from "vitest";
import { MAX_LISTED_FILES, parseNameStatus, parseStatus } from "../../host-agent/src/git/git-porcelain.js";
import { parseLsRemote } from "../../host-agent/src/git/project-repo.js";
import { workspaceOfPath } from "../../host-agent/src/projects/workspaces.js";
import { sessionGitEnv } from "../../protocol/container-layout.js";

describe("status --porcelain=v1 -z --branch", () => {
  it("reads the branch, changes, new files and renames", () => {
    const out = [
      "## main...origin/main [ahead 1]",
      " M src/a.ts",
      "?? new file.txt",
      "R  b.ts",
      "old b.ts",
      "",
    ].join("\0");
    expect(parseStatus(out)).toEqual({
      branch: "main",
      files: [
        { path: "src/a.ts", status: " M" },
        { path: "new file.txt", status: "??" },
        { path: "b.ts", from: "old b.ts", status: "R " },
      ],
      truncated: false,
    });
  });

  it("knows an unborn branch and a detached HEAD", () => {
    expect(parseStatus("## No commits yet on work\0").branch).toBe("work");
    expect(parseStatus("## HEAD (no branch)\0").branch).toBeNull();
  });

  it("skips what is not a status line and stops listing at its cap", () => {
    const many = Array.from({ length: MAX_LISTED_FILES + 5 }, (_, i) => `?? f${i}`);
    const parsed = parseStatus(["## main", "garbage", ...many].join("\0"));
    expect(parsed.files).toHaveLength(MAX_LISTED_FILES);
    expect(parsed.truncated).toBe(true);
  });
});

describe("diff --name-status -z", () => {
  it("reads added, modified, deleted and renamed files", () => {
    const out = ["A", "new.ts", "M", "a.ts", "D", "gone.ts", "R087", "from.ts", "to.ts", ""].join("\0");
    expect(parseNameStatus(out)).toEqual({
      files: [
        { path: "new.ts", status: "A" },
        { path: "a.ts", status: "M" },
        { path: "gone.ts", status: "D" },
        { path: "to.ts", from: "from.ts", status: "R" },
      ],
      truncated: false,
    });
  });

  it("stops at a record cut short", () => {
    expect(parseNameStatus("M\0a.ts\0R100\0only-from").files).toEqual([{ path: "a.ts", status: "M" }]);
  });
});

describe("ls-remote --symref", () => {
  it("reads the branches and the default branch, nothing else", () => {
    const sha = "a".repeat(40);
    const out = `ref: refs/heads/main\tHEAD\n${sha}\tHEAD\n${sha}\trefs/heads/main\n${sha}\trefs/tags/v1\n`;
    expect(parseLsRemote(out)).toEqual({ refs: [{ name: "refs/heads/main", oid: sha }], head: "main" });
  });
});

describe("a session's git environment", () => {
  it("sends the project's remote through git-remote-oubliette, keeping the container's trust of workspaces", () => {
    const env = sessionGitEnv("https://git.example.com/a/b.git");
    expect(env).toMatchObject({
      GIT_CONFIG_COUNT: "2",
      GIT_CONFIG_KEY_0: "safe.directory",
      GIT_CONFIG_KEY_1: "url.oubliette::https://git.example.com/a/b.git.insteadOf",
      GIT_CONFIG_VALUE_1: "https://git.example.com/a/b.git",
    });
    expect(sessionGitEnv(undefined).GIT_CONFIG_COUNT).toBe("1");
  });

  it("finds the workspace a repository path is in", () => {
    expect(workspaceOfPath("/workspace/ws-1/.git", "/workspace")).toBe("ws-1");
    expect(workspaceOfPath("/workspace/../etc/.git", "/workspace")).toBe("");
    expect(workspaceOfPath("/tmp/x/.git", "/workspace")).toBe("");
  });
});
