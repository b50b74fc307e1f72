import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { MIN_HOST_AGENT_VERSION } from "../../protocol/host-version.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize, type ToolResult } from "./support/mcp.js";
import { createProject } from "./support/projects.js";

let admin = "";
let host: FakeHost;
beforeEach(async () => {
  admin = await initialize();
  host = await FakeHost.connect(uniqueHostId("projects"), { maxSessions: 50 });
});
afterEach(disconnectAll);

const call = (tool: string, args: Record<string, unknown>) => callTool(admin, tool, args);
const codeOf = (r: ToolResult) =>
  z.object({ error: z.object({ code: z.string() }) }).parse(r.structuredContent).error.code;
const errorOf = (r: ToolResult) =>
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }).parse(r.structuredContent).error;
const sessionIdOf = (r: ToolResult) =>
  z.object({ session_id: z.string() }).parse(r.structuredContent).session_id;

describe("project", () => {
  it("creates a project with defaults and a git-initialised default workspace; names are unique", async () => {
    const name = `svc-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("project", { action: "create", name, env: { LOG_LEVEL: "debug" } });
    expect(created.structuredContent).toMatchObject({
      project_id: expect.stringMatching(/^prj_[0-9a-f]{24}$/),
      name,
      default_agent: "scripted",
      init_git: true,
      workspace_isolation: false,
      limits: { max_recursion_depth: 3, idle_timeout_seconds: 1800, max_lifetime_seconds: 86400 },
      workspaces: 1,
    });
    const projectId = String(created.structuredContent?.project_id);
    const workspaces = await call("workspace", { action: "list", project_id: projectId });
    expect(workspaces.structuredContent).toMatchObject({
      workspaces: [{ workspace_id: "default", default: true, origin: "init" }],
    });
    expect(codeOf(await call("project", { action: "create", name }))).toBe("conflict");
    const listed = await call("project", { action: "list" });
    expect(listed.content[0]?.text).toContain(projectId);
    expect((await call("project", { action: "get", project_id: projectId })).structuredContent).toMatchObject(
      { name },
    );
  });

  it.each([
    [{ name: "has space" }, "name"],
    [{ name: "x", env: { API_KEY: "s3cret" } }, "secrets"],
    [{ name: "x", env: { OUBLIETTE_SOCKET: "/x" } }, "reserved"],
    [{ name: "x", limits: { memory_mb: 1 } }, "memory_mb"],
    [{ name: "x", limits: { disk_mb: 1 } }, "disk_mb"],
    [{ name: "x", remote_url: "-uhttps://evil" }, "remote_url"],
    [{ name: "x", git_credential: "../keys" }, "git_credential"],
    [{ name: "x", protected_paths: ["../etc"] }, "protected"],
    [{ name: "x", container_type: "default", image: "node:20" }, "not both"],
  ])("refuses an invalid config %j with a message naming the problem", async (config, words) => {
    const result = await call("project", { action: "create", ...config });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain(words);
  });

  it("refuses a misspelt limit naming it, instead of dropping it and applying the default", async () => {
    const name = `typo-${crypto.randomUUID().slice(0, 8)}`;
    const result = await call("project", { action: "create", name, limits: { disk_mbb: 1 } });
    expect(errorOf(result)).toEqual({
      code: "invalid_arguments",
      message: 'Invalid arguments for project: limits: Unrecognized key: "disk_mbb"',
    });
    const listed = await call("project", { action: "list" });
    expect(listed.content[0]?.text).not.toContain(name);
  });

  it("options lists container types, agents and default limits", async () => {
    const options = await call("project", { action: "options" });
    expect(options.structuredContent).toMatchObject({
      container_types: { default: expect.any(String) },
      agents: { scripted: expect.any(String), claude: expect.any(String), droid: expect.any(String) },
      default_limits: { pids: 256, disk_mb: null },
    });
  });

  it("keeps disk_mb, shows it with the other limits and gives it to the host in the project spec", async () => {
    const projectId = await createProject({ limits: { disk_mb: 256 } });
    const got = await call("project", { action: "get", project_id: projectId });
    expect(got.structuredContent).toMatchObject({ limits: { disk_mb: 256, memory_mb: 1024 } });
    const limits = await call("config_limits", { project_id: projectId });
    expect(limits.structuredContent).toMatchObject({ project_id: projectId, disk_mb: 256, pids: 256 });
    await call("session", { action: "spawn", project_id: projectId });
    const start = host.starts().find((s) => s.project_id === projectId);
    expect(start?.project?.limits).toEqual({ memory_mb: 1024, cpus: 1, pids: 256, disk_mb: 256 });
  });

  it("leaves disk to the host's default when no disk_mb is given", async () => {
    const projectId = await createProject();
    const limits = await call("config_limits", { project_id: projectId });
    expect(limits.structuredContent).toMatchObject({ disk_mb: null });
    await call("session", { action: "spawn", project_id: projectId });
    const start = host.starts().find((s) => s.project_id === projectId);
    expect(start?.project?.limits).toEqual({ memory_mb: 1024, cpus: 1, pids: 256 });
  });

  it("project get says the disk bound in force: its own, else its host's default, and how the host keeps it", async () => {
    await host.hello({ disk: { mode: "measured", default_mb: 2048 } });
    const own = await createProject({ limits: { disk_mb: 300 } });
    const inherited = await createProject();
    const disk = async (id: string) =>
      (await call("project", { action: "get", project_id: id })).structuredContent?.disk;
    expect(await disk(inherited)).toEqual({ limit_mb: null, source: "unknown", mode: null });
    for (const id of [own, inherited]) await call("session", { action: "spawn", project_id: id });
    // The project learns its host as the spawn places it.
    await expect.poll(() => disk(own)).toEqual({ limit_mb: 300, source: "project", mode: "measured" });
    expect((await call("project", { action: "get", project_id: own })).structuredContent?.host_id).toBe(
      host.hostId,
    );
    await expect
      .poll(() => disk(inherited))
      .toEqual({ limit_mb: 2048, source: "host_default", mode: "measured" });
    const hosts = (await call("host", { action: "list" })).structuredContent?.hosts as {
      host_id: string;
      disk: unknown;
      version: string | null;
      last_seen: string | null;
    }[];
    const listed = hosts.find((h) => h.host_id === host.hostId);
    expect(listed?.disk).toEqual({ mode: "measured", default_mb: 2048 });
    // Its version from its hello, and when it was last heard from (no later than now).
    expect(listed?.version).toBe(MIN_HOST_AGENT_VERSION);
    const lastSeen = Date.parse(listed?.last_seen ?? "");
    expect(lastSeen).toBeGreaterThan(Date.now() - 120_000);
    expect(lastSeen).toBeLessThanOrEqual(Date.now());
  });

  it("hands the host the project's remote and the name of its git credential (never a secret) to clone", async () => {
    const projectId = await createProject({
      remote_url: "https://forge.example/acme/app.git",
      git_credential: "forge-acme",
    });
    const info = (await call("project", { action: "get", project_id: projectId })).structuredContent;
    expect(info).toMatchObject({
      remote_url: "https://forge.example/acme/app.git",
      git_credential: "forge-acme",
    });
    await call("session", { action: "spawn", project_id: projectId });
    const created = host.socket
      .requests(TunnelMethod.workspaceCreate)
      .map((r) => r.params as Record<string, unknown>)
      .find((p) => p.project_id === projectId);
    expect(created).toMatchObject({
      workspace_id: "default",
      init_git: false,
      remote_url: "https://forge.example/acme/app.git",
      git_credential: "forge-acme",
    });
  });

  it("workspace push sends the project's remote and credential name to its host, and needs a remote", async () => {
    const bare = await createProject();
    const refused = await call("workspace", { action: "push", project_id: bare, branch: "feature/x" });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toContain("has no remote_url");
    const projectId = await createProject({
      remote_url: "https://forge.example/acme/app.git",
      git_credential: "forge-acme",
    });
    await call("session", { action: "spawn", project_id: projectId });
    const badBranch = await call("workspace", { action: "push", project_id: projectId, branch: "--force" });
    expect(badBranch.isError).toBe(true);
    expect(badBranch.content[0]?.text).toContain("branch");
    await call("workspace", { action: "push", project_id: projectId, branch: "feature/x" });
    const sent = host.socket
      .requests(TunnelMethod.workspacePush)
      .map((r) => r.params as Record<string, unknown>)
      .find((p) => p.project_id === projectId);
    expect(sent).toEqual({
      project_id: projectId,
      workspace_id: "default",
      branch: "feature/x",
      remote_url: "https://forge.example/acme/app.git",
      git_credential: "forge-acme",
    });
  });

  it("config_limits returns the project's limits", async () => {
    const projectId = await createProject({ limits: { max_recursion_depth: 1, max_cost_usd: 5 } });
    const limits = await call("config_limits", { project_id: projectId });
    expect(limits.structuredContent).toMatchObject({
      project_id: projectId,
      max_recursion_depth: 1,
      max_cost_usd: 5,
    });
  });

  it("refuses delete while a session runs, deletes with force (ending it) and revokes the project's tokens", async () => {
    const projectId = await createProject();
    const sessionId = sessionIdOf(await call("session", { action: "spawn", project_id: projectId }));
    const token = await call("token", { action: "create", name: "mate", scope: `project:${projectId}` });
    expect(codeOf(await call("project", { action: "delete", project_id: projectId }))).toBe("conflict");
    const deleted = await call("project", { action: "delete", project_id: projectId, force: true });
    expect(deleted.structuredContent).toMatchObject({
      deleted: true,
      ended_sessions: [sessionId],
      revoked_tokens: 1,
    });
    expect((await call("session", { action: "get", session_id: sessionId })).structuredContent).toMatchObject(
      { status: "ended" },
    );
    expect(codeOf(await call("project", { action: "get", project_id: projectId }))).toBe("not_found");
    expect((await call("project", { action: "list" })).content[0]?.text).not.toContain(projectId);
    const tokens = await call("token", { action: "list", include_revoked: true });
    const tokenId = String(token.structuredContent?.token_id);
    const listed = z
      .object({ tokens: z.array(z.looseObject({ token_id: z.string(), status: z.string() })) })
      .parse(tokens.structuredContent);
    expect(listed.tokens.find((t) => t.token_id === tokenId)?.status).toBe("revoked");
  });
});

describe("sessions and workspaces", () => {
  it("resumes the workspace's running session unless new_session, and creates workspaces on request", async () => {
    const projectId = await createProject();
    const first = await call("session", { action: "spawn", project_id: projectId });
    expect(first.structuredContent).toMatchObject({ workspace_id: "default", resumed: false });
    const again = await call("session", { action: "spawn", project_id: projectId, prompt: "more" });
    expect(again.structuredContent).toMatchObject({
      session_id: sessionIdOf(first),
      resumed: true,
      message_seq: 1,
    });
    const fresh = await call("session", { action: "spawn", project_id: projectId, new_session: true });
    expect(sessionIdOf(fresh)).not.toBe(sessionIdOf(first));
    expect(
      codeOf(await call("session", { action: "spawn", project_id: projectId, workspace_id: "feature-x" })),
    ).toBe("not_found");
    const other = await call("session", {
      action: "spawn",
      project_id: projectId,
      workspace_id: "feature-x",
      create_workspace: true,
    });
    expect(other.structuredContent).toMatchObject({ workspace_id: "feature-x", resumed: false });
    const generated = await call("session", {
      action: "spawn",
      project_id: projectId,
      create_workspace: true,
    });
    expect(generated.structuredContent).toMatchObject({
      workspace_id: expect.stringMatching(/^ws-[0-9a-f]{12}$/),
    });
    // message by project: to the default workspace's running session (the newest, when several run).
    const message = await call("session", { action: "message", project_id: projectId, message: "hello" });
    expect(message.structuredContent).toMatchObject({ session_id: sessionIdOf(fresh), resumed: true });
  });

  it("refuses to delete the default workspace or one a session runs in", async () => {
    const projectId = await createProject();
    await call("session", {
      action: "spawn",
      project_id: projectId,
      workspace_id: "busy",
      create_workspace: true,
    });
    expect(
      codeOf(await call("workspace", { action: "delete", project_id: projectId, workspace_id: "default" })),
    ).toBe("conflict");
    expect(
      codeOf(await call("workspace", { action: "delete", project_id: projectId, workspace_id: "busy" })),
    ).toBe("conflict");
    const sessions = await call("session", { action: "list", project_id: projectId });
    const [busy] = z
      .object({ sessions: z.array(z.object({ session_id: z.string() })) })
      .parse(sessions.structuredContent).sessions;
    await call("session", { action: "end", session_id: busy?.session_id });
    const deleted = await call("workspace", {
      action: "delete",
      project_id: projectId,
      workspace_id: "busy",
    });
    expect(deleted.structuredContent).toMatchObject({ workspace_id: "busy", deleted: true });
  });

  it("lists sessions by status and owner, a page at a time, and cleans up old ended ones", async () => {
    const projectId = await createProject();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        sessionIdOf(await call("session", { action: "spawn", project_id: projectId, new_session: true })),
      );
    await call("session", { action: "end", session_id: ids[0] });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call("session", {
        action: "list",
        project_id: projectId,
        limit: 2,
        ...(cursor ? { cursor } : {}),
      });
      const parsed = z
        .object({
          sessions: z.array(z.object({ session_id: z.string() })),
          next_cursor: z.string().nullable(),
        })
        .parse(page.structuredContent);
      expect(parsed.sessions.length).toBeLessThanOrEqual(2);
      seen.push(...parsed.sessions.map((s) => s.session_id));
      cursor = parsed.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(ids);
    const ended = await call("session", { action: "list", project_id: projectId, status: "ended" });
    expect(ended.structuredContent).toMatchObject({
      sessions: [{ session_id: ids[0], end_reason: "ended by the caller" }],
    });
    const byOther = await call("session", { action: "list", project_id: projectId, owner: "nobody" });
    expect(byOther.structuredContent).toMatchObject({ sessions: [] });
    const cleaned = await call("session", { action: "cleanup", project_id: projectId, max_age_hours: 0 });
    expect(cleaned.structuredContent).toMatchObject({ removed: 1, session_ids: [ids[0]] });
    expect(codeOf(await call("session", { action: "get", session_id: ids[0] }))).toBe("not_found");
  });
});

describe("audit", () => {
  it("records mutating calls (with outcome) and not reads; only admins read it", async () => {
    const name = `audited-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("project", { action: "create", name });
    await call("project", { action: "create", name });
    await call("project", { action: "list" });
    const projectId = String(created.structuredContent?.project_id);
    const entries = async () =>
      z
        .object({
          entries: z.array(
            z.object({
              action: z.string(),
              target: z.string().nullable(),
              outcome: z.string(),
              token_id: z.string(),
            }),
          ),
        })
        .parse((await call("audit", { action_prefix: "project." })).structuredContent).entries;
    let log = await entries();
    for (let i = 0; i < 20 && !log.some((e) => e.outcome === "conflict"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      log = await entries();
    }
    expect(log).toContainEqual({
      action: "project.create",
      target: projectId,
      outcome: "ok",
      token_id: "admin",
    });
    expect(log).toContainEqual(expect.objectContaining({ action: "project.create", outcome: "conflict" }));
    expect(log.some((e) => e.action === "project.list")).toBe(false);
  });
});
