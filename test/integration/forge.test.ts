/**
 * Opening pull requests (GitHub) and merge requests (GitLab) through the forge's REST API, against
 * a fake forge on loopback (test/support/fake-forge.ts) that checks the token and answers with the
 * bodies the two APIs document: what is sent, what comes back, and that the forge's refusals are
 * passed on with their status and message, and never with the token. Then how a project's remote
 * URL names its forge's API.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ForgeTarget,
  forgeTarget,
  openPullRequest,
  type PullRequestInput,
} from "../../host-agent/src/git/forge.js";
import { HostError } from "../../host-agent/src/projects/errors.js";
import { type FakeForge, startFakeForge } from "../support/fake-forge.js";

const TOKEN = "ghp_fakeForgeToken0123456789abcdef";
const WRONG = "glpat-wrongToken9876543210zyx";

let forge: FakeForge;
let github: ForgeTarget;
let gitlab: ForgeTarget;

beforeAll(async () => {
  forge = await startFakeForge({
    token: TOKEN,
    repos: ["acme/widgets", "group/sub/project"],
    renamed: { "acme/old-name": "acme/widgets" },
  });
  github = forgeTarget(`${forge.url}/acme/widgets.git`, { kind: "github" });
  gitlab = forgeTarget(`${forge.url}/group/sub/project.git`, { kind: "gitlab" });
});

afterAll(async () => {
  await forge?.close();
});

const pr = (head: string, extra: Partial<PullRequestInput> = {}): PullRequestInput => ({
  head,
  base: "main",
  title: `Add ${head}`,
  body: `The ${head} work.`,
  draft: false,
  ...extra,
});

/** The HostError `promise` fails with (and that it is one). */
async function failure(promise: Promise<unknown>): Promise<HostError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(HostError);
  if (!(error instanceof HostError)) throw new Error("unreachable");
  return error;
}

/** The HostError forgeTarget refuses the remote with. */
function refusal(remote: string, forge: Parameters<typeof forgeTarget>[1]): HostError {
  try {
    forgeTarget(remote, forge);
  } catch (err) {
    if (err instanceof HostError) return err;
    throw err;
  }
  throw new Error(`forgeTarget took ${remote}`);
}

function lastRequest() {
  const last = forge.requests.at(-1);
  if (last === undefined) throw new Error("the fake forge saw no request");
  return last;
}

describe("opening a GitHub pull request", () => {
  it("posts head, base, title, body and draft with the token and returns the pull request's URL", async () => {
    const opened = await openPullRequest(github, TOKEN, pr("feature", { draft: true }));
    expect(opened).toEqual({ url: `${forge.url}/acme/widgets/pull/1`, number: 1 });
    const sent = lastRequest();
    expect(sent.method).toBe("POST");
    expect(sent.path).toBe("/api/v3/repos/acme/widgets/pulls");
    expect(sent.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
      "content-type": "application/json",
      "user-agent": "oubliette-edge",
    });
    expect(sent.body).toEqual({
      title: "Add feature",
      head: "feature",
      base: "main",
      body: "The feature work.",
      draft: true,
    });
  });

  it("passes on a wrong token's 401 and its message, without the token", async () => {
    const error = await failure(openPullRequest(github, WRONG, pr("bad-token")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe("GitHub refused the pull request (401): Bad credentials");
    expect(error.message).not.toContain(WRONG);
    expect(lastRequest().headers.authorization).toBe(`Bearer ${WRONG}`);
  });

  it("passes on the 422 of a duplicate pull request with GitHub's message", async () => {
    await openPullRequest(github, TOKEN, pr("dup"));
    const error = await failure(openPullRequest(github, TOKEN, pr("dup")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe(
      "GitHub refused the pull request (422): Validation Failed: A pull request already exists for acme:dup.",
    );
  });

  it("passes on the 404 of an unknown repository", async () => {
    const target = forgeTarget(`${forge.url}/acme/nothing.git`, { kind: "github" });
    const error = await failure(openPullRequest(target, TOKEN, pr("feature")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe("GitHub refused the pull request (404): Not Found");
  });

  it("refuses an empty head, base or title as invalid without asking the forge", async () => {
    const before = forge.requests.length;
    for (const blank of [{ head: "" }, { base: " " }, { title: "" }]) {
      const error = await failure(openPullRequest(github, TOKEN, pr("feature", blank)));
      expect(error.reason).toBe("invalid");
      expect(error.message).toMatch(/^a pull request needs a (head|base|title)$/);
    }
    expect(forge.requests.length).toBe(before);
  });

  it("refuses a redirect answer and does not follow it", async () => {
    const target = forgeTarget(`${forge.url}/acme/old-name.git`, { kind: "github" });
    const before = forge.requests.length;
    const error = await failure(openPullRequest(target, TOKEN, pr("moved")));
    expect(error.reason).toBe("invalid");
    expect(error.message).toContain("with a redirect (301");
    expect(error.message).toContain("set forge api_url to the API's address");
    expect(forge.requests.slice(before).map((r) => r.path)).toEqual(["/api/v3/repos/acme/old-name/pulls"]);
  });
});

describe("opening a GitLab merge request", () => {
  it("posts source and target branch, a Draft: title and the description with the token", async () => {
    const opened = await openPullRequest(gitlab, TOKEN, pr("feature", { draft: true }));
    expect(opened).toEqual({ url: `${forge.url}/group/sub/project/-/merge_requests/1`, number: 1 });
    const sent = lastRequest();
    expect(sent.method).toBe("POST");
    expect(sent.path).toBe("/api/v4/projects/group%2Fsub%2Fproject/merge_requests");
    expect(sent.headers).toMatchObject({ "private-token": TOKEN, "content-type": "application/json" });
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toEqual({
      source_branch: "feature",
      target_branch: "main",
      title: "Draft: Add feature",
      description: "The feature work.",
    });
  });

  it("sends a title without the prefix when it is not a draft", async () => {
    const opened = await openPullRequest(gitlab, TOKEN, pr("ready"));
    expect(opened.number).toBe(2);
    expect(lastRequest().body).toMatchObject({ title: "Add ready" });
  });

  it("passes on a wrong token's 401 and its message, without the token", async () => {
    const error = await failure(openPullRequest(gitlab, WRONG, pr("bad-token")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe("GitLab refused the merge request (401): 401 Unauthorized");
    expect(error.message).not.toContain(WRONG);
  });

  it("passes on the 409 of a duplicate merge request with GitLab's message", async () => {
    const first = await openPullRequest(gitlab, TOKEN, pr("dup"));
    const error = await failure(openPullRequest(gitlab, TOKEN, pr("dup")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe(
      `GitLab refused the merge request (409): Another open merge request already exists for this source branch: !${first.number}`,
    );
  });

  it("passes on the 404 of an unknown project", async () => {
    const target = forgeTarget(`${forge.url}/group/nothing.git`, { kind: "gitlab" });
    const error = await failure(openPullRequest(target, TOKEN, pr("feature")));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe("GitLab refused the merge request (404): 404 Project Not Found");
  });
});

describe("a forge that cannot be reached or answers badly", () => {
  it("fails with host_error when nothing listens at the API's address", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const address = closed.address();
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    const target = forgeTarget(`http://127.0.0.1:${address.port}/acme/widgets.git`, { kind: "github" });
    const error = await failure(openPullRequest(target, TOKEN, pr("feature")));
    expect(error.reason).toBe("host_error");
    expect(error.message).toContain(`could not reach GitHub at http://127.0.0.1:${address.port}/api/v3`);
    expect(error.message).toContain("ECONNREFUSED");
  });

  it("fails with timeout when the forge does not answer within the deadline", async () => {
    const silent: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
      );
    const error = await failure(openPullRequest(github, TOKEN, pr("slow"), { fetch: silent, timeoutMs: 20 }));
    expect(error.reason).toBe("timeout");
    expect(error.message).toBe(
      "GitHub did not answer the pull request within 20 ms (it may have been opened anyway)",
    );
  });

  it("fails with host_error on a 5xx, passing on its status and message without the token", async () => {
    const broken: typeof fetch = async () =>
      Response.json({ message: `upstream broke while handling ${TOKEN}` }, { status: 502 });
    const error = await failure(openPullRequest(github, TOKEN, pr("feature"), { fetch: broken }));
    expect(error.reason).toBe("host_error");
    expect(error.message).toBe("GitHub failed the pull request (502): upstream broke while handling [token]");
  });

  it("passes on at most 1000 characters of a long error message", async () => {
    const verbose: typeof fetch = async () =>
      Response.json({ message: "x".repeat(100_000) }, { status: 400 });
    const error = await failure(openPullRequest(github, TOKEN, pr("feature"), { fetch: verbose }));
    expect(error.reason).toBe("rejected");
    expect(error.message).toBe(`GitHub refused the pull request (400): ${"x".repeat(1000)}`);
  });

  it("stops reading an endless answer at 1 MiB and fails with host_error", async () => {
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 64 * 1024;
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
      },
    });
    const flood: typeof fetch = async () => new Response(endless, { status: 201 });
    const error = await failure(openPullRequest(github, TOKEN, pr("feature"), { fetch: flood }));
    expect(error.reason).toBe("host_error");
    expect(error.message).toBe(`GitHub's answer to the pull request (201) is over ${1024 * 1024} bytes`);
    expect(sent).toBeLessThan(2 * 1024 * 1024);
  });
});

describe("the forge target of a project's remote", () => {
  it("does not echo the user and password of a remote URL it refuses", () => {
    for (const remote of [
      "https://someone:hunter2secret@code.example/acme/widgets.git",
      "ftp://someone:hunter2secret@github.com/acme/widgets.git",
      "https://someone:hunter2secret@github.com/widgets.git",
    ]) {
      const error = refusal(remote, {});
      expect(error.reason).toBe("invalid");
      expect(error.message).not.toMatch(/someone|hunter2secret/);
    }
  });

  // remote, forge settings → "kind apiUrl repoPath"
  it.each([
    ["https://github.com/acme/widgets.git", {}, "github https://api.github.com acme/widgets"],
    ["ssh://git@github.com/acme/widgets.git", {}, "github https://api.github.com acme/widgets"],
    [
      "https://ghe.corp.example/acme/widgets",
      { kind: "github" },
      "github https://ghe.corp.example/api/v3 acme/widgets",
    ],
    ["https://gitlab.com/group/sub/project.git", {}, "gitlab https://gitlab.com/api/v4 group/sub/project"],
    ["https://gitlab.example.com/team/app/", {}, "gitlab https://gitlab.example.com/api/v4 team/app"],
    [
      "ssh://git@gitlab.example.com:2222/team/app.git",
      {},
      "gitlab https://gitlab.example.com/api/v4 team/app",
    ],
    [
      "http://127.0.0.1:8080/acme/widgets.git",
      { kind: "github" },
      "github http://127.0.0.1:8080/api/v3 acme/widgets",
    ],
    [
      "https://code.corp.example/team/app.git",
      { kind: "gitlab", api_url: "https://code.corp.example/gitlab/api/v4/" },
      "gitlab https://code.corp.example/gitlab/api/v4 team/app",
    ],
  ] as const)("%s %o → %s", (remote, forge, expected) => {
    const target = forgeTarget(remote, forge);
    expect(`${target.kind} ${target.apiUrl} ${target.repoPath}`).toBe(expected);
  });

  it.each([
    ["https://github.com/widgets.git", {}, "is not a repository path"],
    ["https://github.com/acme/widgets/extra", {}, "a GitHub repository path is owner/repo"],
    ["https://code.example/acme/widgets.git", {}, "name forge.kind"],
    ["git@github.com:acme/widgets.git", {}, "is not a URL"],
    ["not a url", {}, "is not a URL"],
    ["https://github.com/acme/wid%20gets", {}, "is not a repository path"],
    ["file:///srv/acme/widgets.git", { kind: "github" }, "is not an https://, http:// or ssh:// URL"],
    ["https://github.com/acme/widgets.git", { api_url: "ftp://github.com/api" }, "is not an https:// URL"],
  ] as const)("refuses %s %o as invalid: %s", (remote, forge, why) => {
    expect(refusal(remote, forge)).toMatchObject({
      reason: "invalid",
      message: expect.stringContaining(why),
    });
  });
});
