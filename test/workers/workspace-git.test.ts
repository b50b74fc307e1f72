/**
 * The workspace tool's git actions as the Worker handles them: what it asks the project's host
 * (`workspace_git`, `workspace_push`, `workspace_pull_request`), what it refuses before asking,
 * the host's refusals passed on, and the events the workspace's sessions get. The git itself is
 * tested with Docker (test/docker/git-workspaces.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { TunnelMethod } from "../../protocol/tunnel.js";
import {
  disconnectAll,
  FakeHost,
  type HostAnswer,
  SessionTunnel,
  uniqueHostId,
} from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { resultOf } from "./support/rpc-socket.js";
import { events, liveSession } from "./support/session.js";

const REMOTE = "https://git.example.com/acme/app.git";
const COMMIT = "a".repeat(40);

afterEach(() => disconnectAll());

/** A host answering the git requests as `answers` say (by method), everything else with `{}`. */
async function gitHost(answers: Record<string, HostAnswer>) {
  return FakeHost.connect(uniqueHostId(), {
    answer: (request) =>
      request.method === "project" ? (answers[request.name] ?? { ok: true }) : { ok: true },
  });
}

const paramsOf = (host: FakeHost, method: string) => host.socket.requests(method).map((r) => r.params);

describe("workspace git actions", () => {
  it("status, diff and commit are asked of the host as workspace_git, their answers passed on", async () => {
    const host = await gitHost({
      [TunnelMethod.workspaceGit]: {
        ok: true,
        result: { op: "status", branch: "main", head: COMMIT, clean: true, files: [], truncated: false },
      },
    });
    const projectId = await createProject();
    const mcp = await initialize();
    await callTool(mcp, "container", { action: "start", project_id: projectId });
    const status = await callTool(mcp, "workspace", { action: "status", project_id: projectId });
    expect(status.structuredContent).toMatchObject({ workspace_id: "default", branch: "main", clean: true });
    await callTool(mcp, "workspace", { action: "diff", project_id: projectId, base: "main", max_bytes: 100 });
    await callTool(mcp, "workspace", {
      action: "commit",
      project_id: projectId,
      workspace_id: "default",
      message: "Fix",
      author: { name: "Ada", email: "ada@example.com" },
    });
    expect(paramsOf(host, TunnelMethod.workspaceGit)).toEqual([
      { project_id: projectId, workspace_id: "default", op: "status" },
      { project_id: projectId, workspace_id: "default", op: "diff", base: "main", max_bytes: 100 },
      {
        project_id: projectId,
        workspace_id: "default",
        op: "commit",
        message: "Fix",
        author: { name: "Ada", email: "ada@example.com" },
      },
    ]);
    // A revision that could be an option never reaches the host.
    const bad = await callTool(mcp, "workspace", {
      action: "diff",
      project_id: projectId,
      base: "--output=/x",
    });
    expect(bad.isError).toBe(true);
    expect(paramsOf(host, TunnelMethod.workspaceGit)).toHaveLength(3);
  });

  it("pull_request goes to the host with the project's credential and forge; its sessions hear of it", async () => {
    const opened = { url: "https://git.example.com/acme/app/pull/7", number: 7, head: "fix", base: "main" };
    const host = await gitHost({ [TunnelMethod.workspacePullRequest]: { ok: true, result: opened } });
    const projectId = await createProject({
      remote_url: REMOTE,
      git_credential: "acme",
      forge: { kind: "github", api_url: "https://ghe.example.com/api/v3" },
    });
    const mcp = await initialize();
    const spawned = await callTool(mcp, "session", { action: "spawn", project_id: projectId });
    const sessionId = z.object({ session_id: z.string() }).parse(spawned.structuredContent).session_id;
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello(host.hostId);
    const answer = await callTool(mcp, "workspace", {
      action: "pull_request",
      project_id: projectId,
      head: "fix",
      title: "Fix it",
      draft: true,
    });
    expect(answer.structuredContent).toMatchObject(opened);
    expect(paramsOf(host, TunnelMethod.workspacePullRequest).at(-1)).toEqual({
      project_id: projectId,
      workspace_id: "default",
      remote_url: REMOTE,
      git_credential: "acme",
      forge: { kind: "github", api_url: "https://ghe.example.com/api/v3" },
      head: "fix",
      title: "Fix it",
      body: "",
      draft: true,
    });
    await until(
      async () => (await events(sessionId)).events.some((e) => e.type === "pull_request_opened"),
      "the pull_request_opened event",
    );
    const event = (await events(sessionId)).events.find((e) => e.type === "pull_request_opened");
    expect(event).toMatchObject({ url: opened.url, number: 7, head: "fix", base: "main", title: "Fix it" });
  });

  it("refuses a pull request without a remote or a credential before asking, and passes on the forge's refusal", async () => {
    const host = await gitHost({
      [TunnelMethod.workspacePullRequest]: {
        ok: false,
        reason: "rejected",
        message: "GitHub refused the pull request (422): A pull request already exists for acme:fix.",
      },
    });
    const mcp = await initialize();
    const request = (projectId: string) =>
      callTool(mcp, "workspace", { action: "pull_request", project_id: projectId, head: "fix", title: "x" });
    const noRemote = await request(await createProject());
    expect(noRemote).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining("no remote_url") }],
    });
    const noCredential = await request(await createProject({ remote_url: REMOTE }));
    expect(noCredential).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining("no git_credential") }],
    });
    expect(paramsOf(host, TunnelMethod.workspacePullRequest)).toEqual([]);
    const projectId = await createProject({ remote_url: REMOTE, git_credential: "acme" });
    await callTool(mcp, "container", { action: "start", project_id: projectId });
    const refused = await request(projectId);
    expect(refused).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining("(422): A pull request already exists") }],
    });
  });
});

describe("the agent's own pushes, told by the host", () => {
  it("one git_pushed event and one audit entry per push id, however often the host sends it", async () => {
    const s = await liveSession();
    const push = {
      push_id: "gp_0123456789abcdef",
      branch: "agent/one",
      commit: COMMIT,
      outcome: "created" as const,
      remote_url: REMOTE,
    };
    expect(resultOf(await s.tunnel.gitPushed(push))).toEqual({});
    // The host did not see the answer (the tunnel dropped) and sends it again after a reconnect.
    expect(resultOf(await s.tunnel.gitPushed(push))).toEqual({});
    expect(
      resultOf(await s.tunnel.gitPushed({ ...push, push_id: "gp_fedcba9876543210", outcome: "up_to_date" })),
    ).toEqual({});
    const told = (await events(s.sessionId)).events.filter((e) => e.type === "git_pushed");
    expect(told).toMatchObject([
      { branch: "agent/one", commit: COMMIT, outcome: "created", remote_url: REMOTE, by: "agent" },
      { branch: "agent/one", outcome: "up_to_date", by: "agent" },
    ]);
    expect(told[0]).not.toHaveProperty("push_id");
    const mcp = await initialize();
    await until(async () => {
      const listed = await callTool(mcp, "audit", { action_prefix: "git.push" });
      const entries = (listed.structuredContent as { entries: { via_session: string | null }[] }).entries;
      return entries.filter((e) => e.via_session === s.sessionId).length === 2;
    }, "two audit entries for the session's pushes");
  });

  it("refuses a push without a valid push id", async () => {
    const s = await liveSession();
    const answer = await s.tunnel.gitPushed({
      push_id: "not-an-id",
      branch: "agent/one",
      commit: COMMIT,
      outcome: "created",
      remote_url: REMOTE,
    });
    expect(answer.kind).toBe("error");
    expect((await events(s.sessionId)).events.filter((e) => e.type === "git_pushed")).toEqual([]);
  });
});
