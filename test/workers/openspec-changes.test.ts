/**
 * `project_changes` as the Worker builds it from the host's `workspace_read` answers (a fake host
 * answering as the host-agent does, host-agent/src/projects/workspace-read.ts): one change the
 * host refuses to read (its tasks.md a symlink out of the workspace) is listed as refused with the
 * host's reason, and the others are listed as ever; a host that cannot answer at all still fails
 * the listing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { disconnectAll, FakeHost, type HostAnswer, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { createProject } from "./support/projects.js";

afterEach(() => disconnectAll());

const dir = (...names: string[]) => ({ entries: names.map((name) => ({ name, type: "dir" })) });
const file = (content: string) => ({ content, truncated: false });
const refused = (message: string): HostAnswer => ({ ok: false, reason: "invalid", message });

/** A host answering `workspace_read` by path from `paths` (unknown paths: not found). */
async function workspaceHost(paths: Record<string, HostAnswer>) {
  return FakeHost.connect(uniqueHostId(), {
    answer: (request) => {
      if (request.method !== "project" || request.name !== TunnelMethod.workspaceRead) return { ok: true };
      const path = String(request.params.path);
      return (
        paths[path] ?? { ok: false, reason: "not_found", message: `${path} does not exist in the workspace` }
      );
    },
  });
}

async function listChanges(paths: Record<string, HostAnswer>, includeArchived = false) {
  await workspaceHost(paths);
  const projectId = await createProject();
  const mcp = await initialize();
  await callTool(mcp, "container", { action: "start", project_id: projectId });
  return callTool(mcp, "project_changes", { project_id: projectId, include_archived: includeArchived });
}

describe("project_changes with one change the host will not read", () => {
  it("lists the others and marks that one as refused, with the host's reason", async () => {
    const listed = await listChanges(
      {
        "openspec/changes": { ok: true, result: dir("add-export", "escape", "fix-login", "archive") },
        "openspec/changes/add-export/tasks.md": { ok: true, result: file("- [x] 1.1 One\n- [ ] 1.2 Two\n") },
        "openspec/changes/escape/tasks.md": refused(
          "openspec/changes/escape/tasks.md leads out of the workspace",
        ),
        "openspec/changes/archive": refused("openspec/changes/archive leads out of the workspace"),
      },
      true,
    );
    expect(listed.isError).toBeFalsy();
    expect(listed.structuredContent?.changes).toEqual([
      { change_id: "add-export", archived: false, tasks: { done: 1, total: 2 } },
      {
        change_id: "escape",
        archived: false,
        tasks: null,
        refused: expect.stringContaining("openspec/changes/escape/tasks.md leads out of the workspace"),
      },
      // No tasks.md: listed without progress, as before.
      { change_id: "fix-login", archived: false, tasks: null },
      {
        change_id: "archive",
        archived: true,
        tasks: null,
        refused: expect.stringContaining("leads out of the workspace"),
      },
    ]);
  });

  it("a host that fails (not a refusal of one path) still fails the listing", async () => {
    const listed = await listChanges({
      "openspec/changes": { ok: true, result: dir("add-export", "broken") },
      "openspec/changes/add-export/tasks.md": { ok: true, result: file("- [ ] 1.1 One\n") },
      "openspec/changes/broken/tasks.md": { ok: false, reason: "runtime_error", message: "the disk is gone" },
    });
    expect(listed.isError).toBe(true);
    expect(listed.content[0]?.text).toContain("the disk is gone");
  });
});
