/**
 * A session on a branch of its own (`session spawn` `branch`, `base`): the registry asks the host
 * for a new workspace cloned from the project's remote and started on that branch, and starts the
 * session there with the remote its agent pushes to. The git itself is tested with Docker
 * (test/docker/git-workspaces.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { WorkspaceCreateParamsSchema } from "../../protocol/tunnel-projects.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { createProject } from "./support/projects.js";

const REMOTE = "https://git.example.com/acme/app.git";
const Spawned = z.object({ session_id: z.string(), workspace_id: z.string(), branch: z.string() });

afterEach(() => disconnectAll());

function creates(host: FakeHost) {
  return host.socket
    .requests(TunnelMethod.workspaceCreate)
    .map((r) => WorkspaceCreateParamsSchema.parse(r.params));
}

describe("session spawn with a branch", () => {
  it("starts the session in a new workspace cloned on oubliette/<short id>, with the remote to push to", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject({ remote_url: REMOTE, git_credential: "acme" });
    const mcp = await initialize();
    const spawned = Spawned.parse(
      (await callTool(mcp, "session", { action: "spawn", project_id: projectId, branch: true }))
        .structuredContent,
    );
    expect(spawned.branch).toBe(`oubliette/${spawned.session_id.slice(4, 12)}`);
    expect(spawned.workspace_id).not.toBe("default");
    expect(creates(host).at(-1)).toMatchObject({
      workspace_id: spawned.workspace_id,
      remote_url: REMOTE,
      git_credential: "acme",
      branch: { name: spawned.branch },
    });
    expect(host.starts().at(-1)).toMatchObject({
      session_id: spawned.session_id,
      workspace_id: spawned.workspace_id,
      git: { remote_url: REMOTE, git_credential: "acme" },
    });

    // A named branch from a named base, in a workspace named by the caller.
    const named = Spawned.parse(
      (
        await callTool(mcp, "session", {
          action: "spawn",
          project_id: projectId,
          workspace_id: "fix-tests",
          create_workspace: true,
          branch: "fix/tests",
          base: "release",
        })
      ).structuredContent,
    );
    expect(named).toMatchObject({ workspace_id: "fix-tests", branch: "fix/tests" });
    expect(creates(host).at(-1)).toMatchObject({ branch: { name: "fix/tests", base: "release" } });
  });

  it("refuses a base without a branch, a branch in an existing workspace, and a branch git would refuse", async () => {
    await FakeHost.connect(uniqueHostId());
    const projectId = await createProject({ remote_url: REMOTE });
    const mcp = await initialize();
    const spawn = (extra: Record<string, unknown>) =>
      callTool(mcp, "session", { action: "spawn", project_id: projectId, ...extra });
    expect(await spawn({ base: "main" })).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining("give branch too") }],
    });
    expect(await spawn({ workspace_id: "default", branch: true })).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining("new workspace") }],
    });
    for (const branch of ["-x", "a..b", "a b", "x.lock"])
      expect(await spawn({ branch })).toMatchObject({ isError: true });
  });

  it("a session without a branch gets the project's remote too (its agent's own git push)", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject({ remote_url: REMOTE });
    const mcp = await initialize();
    await callTool(mcp, "session", { action: "spawn", project_id: projectId });
    expect(host.starts().at(-1)?.git).toEqual({ remote_url: REMOTE });
    const plain = await createProject();
    await callTool(mcp, "session", { action: "spawn", project_id: plain });
    expect(host.starts().at(-1)?.git).toBeUndefined();
  });
});
