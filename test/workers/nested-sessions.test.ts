/**
 * Nested sessions: a droid (calling `oubliette_session spawn` with its key, through its session's
 * tunnel as the host-agent passes it on) starts a child in its own project, one level deeper, in
 * its workspace; the project's max_recursion_depth and max_agents_per_session refuse with a clear
 * error; the parent reads its children's events merged with its own; ending it ends them.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { resultOf } from "./support/rpc-socket.js";
import { ADMIN_TOKEN } from "./support/tokens.js";

let admin = "";

beforeAll(async () => {
  admin = await initialize(ADMIN_TOKEN);
});

afterEach(async () => {
  await disconnectAll();
});

const ToolResult = z.object({
  isError: z.boolean().optional(),
  content: z.array(z.object({ text: z.string() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
});

/** A project with the given limits, a host, a session spawned by the caller, and the droid's view of it. */
async function family(limits: Record<string, number>) {
  const host = await FakeHost.connect(uniqueHostId());
  const projectId = await createProject({ limits });
  const spawned = await callTool(admin, "session", {
    action: "spawn",
    project_id: projectId,
    oubliette_access: "project",
  });
  const parent = z
    .object({ session_id: z.string(), workspace_id: z.string() })
    .parse(spawned.structuredContent);
  return {
    host,
    projectId,
    parent: await droidOf(host, parent.session_id),
    parentWorkspace: parent.workspace_id,
  };
}

/** A session as its droid reaches the session object: its tunnel, and the key it was given. */
async function droidOf(host: FakeHost, sessionId: string) {
  const start = host.starts().find((s) => s.session_id === sessionId);
  const key = start?.spec.env?.OUBLIETTE_API_KEY ?? "";
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(host.hostId);
  const spawn = async (args: Record<string, unknown>) =>
    ToolResult.parse(
      resultOf(
        await tunnel.socket.ask("oubliette_call_tool", {
          api_key: key,
          tool: "session",
          arguments: { action: "spawn", ...args },
        }),
      ),
    );
  return { sessionId, tunnel, key, spawn };
}

async function info(sessionId: string) {
  const got = await callTool(admin, "session", { action: "get", session_id: sessionId });
  return z
    .object({
      status: z.string(),
      depth: z.number(),
      parent_session_id: z.string().nullable(),
      children: z.array(z.string()),
    })
    .passthrough()
    .parse(got.structuredContent);
}

describe("nested sessions", () => {
  it("starts a child one level deeper, in the parent's project and workspace, as a new session", async () => {
    const { host, projectId, parent, parentWorkspace } = await family({
      max_recursion_depth: 2,
      max_agents_per_session: 4,
    });
    const made = await parent.spawn({ project_id: projectId, prompt: "help me" });
    expect(made.isError).toBeFalsy();
    const child = z
      .object({
        session_id: z.string(),
        depth: z.number(),
        parent_session_id: z.string(),
        workspace_id: z.string(),
      })
      .parse(made.structuredContent);
    expect(child).toMatchObject({
      depth: 1,
      parent_session_id: parent.sessionId,
      workspace_id: parentWorkspace,
    });
    expect(child.session_id).not.toBe(parent.sessionId);
    expect((await info(parent.sessionId)).children).toEqual([child.session_id]);
    expect(host.starts().map((s) => s.session_id)).toContain(child.session_id);
    // Its key is the project's: another project is beyond its scope (-32002).
    const elsewhere = await parent.tunnel.socket.ask("oubliette_call_tool", {
      api_key: parent.key,
      tool: "session",
      arguments: { action: "spawn", project_id: await createProject() },
    });
    expect(elsewhere).toMatchObject({ kind: "error", error: { code: -32002 } });
  });

  it("refuses a level past max_recursion_depth, with the limit named", async () => {
    const { host, projectId, parent } = await family({ max_recursion_depth: 1, max_agents_per_session: 4 });
    const made = await parent.spawn({ project_id: projectId, oubliette_access: "project" });
    const childId = z.object({ session_id: z.string() }).parse(made.structuredContent).session_id;
    const child = await droidOf(host, childId);
    const deeper = await child.spawn({ project_id: projectId });
    expect(deeper.isError).toBe(true);
    expect(deeper.content[0]?.text).toMatch(/max_recursion_depth 1 reached.*limit_exceeded/);
  });

  it("refuses a child past max_agents_per_session, counting only live children", async () => {
    const { projectId, parent } = await family({ max_recursion_depth: 3, max_agents_per_session: 2 });
    const first = z
      .object({ session_id: z.string() })
      .parse((await parent.spawn({ project_id: projectId })).structuredContent);
    await parent.spawn({ project_id: projectId });
    const third = await parent.spawn({ project_id: projectId });
    expect(third.isError).toBe(true);
    expect(third.content[0]?.text).toMatch(/max_agents_per_session 2 reached/);
    await callTool(admin, "session", { action: "end", session_id: first.session_id });
    expect((await parent.spawn({ project_id: projectId })).isError).toBeFalsy();
  });

  it("merges its children's events into its own with include_children, each naming its session", async () => {
    const { host, projectId, parent } = await family({ max_recursion_depth: 2, max_agents_per_session: 4 });
    const childId = z
      .object({ session_id: z.string() })
      .parse((await parent.spawn({ project_id: projectId })).structuredContent).session_id;
    const child = await droidOf(host, childId);
    await child.tunnel.events({ seq: 1, type: "message", text: "hello from the child" });
    await parent.tunnel.events({ seq: 1, type: "message", text: "hello from the parent" });
    const read = await callTool(admin, "session", {
      action: "events",
      session_id: parent.sessionId,
      include_children: true,
    });
    const page = z
      .object({
        events: z.array(
          z.object({ session_id: z.string(), type: z.string(), text: z.string().optional() }).passthrough(),
        ),
        children_next_index: z.record(z.string(), z.number()),
      })
      .parse(read.structuredContent);
    const messages = page.events.filter((e) => e.type === "message").map((e) => [e.session_id, e.text]);
    expect(messages).toEqual(
      expect.arrayContaining([
        [childId, "hello from the child"],
        [parent.sessionId, "hello from the parent"],
      ]),
    );
    expect(page.children_next_index[childId]).toBeGreaterThan(0);
    const plain = await callTool(admin, "session", { action: "events", session_id: parent.sessionId });
    expect(JSON.stringify(plain.structuredContent)).not.toContain("hello from the child");
  });

  it("ends its children (and theirs) when it ends", async () => {
    const { host, projectId, parent } = await family({ max_recursion_depth: 3, max_agents_per_session: 4 });
    const childId = z
      .object({ session_id: z.string() })
      .parse(
        (await parent.spawn({ project_id: projectId, oubliette_access: "project" })).structuredContent,
      ).session_id;
    const child = await droidOf(host, childId);
    const grandchildId = z
      .object({ session_id: z.string() })
      .parse((await child.spawn({ project_id: projectId })).structuredContent).session_id;
    expect((await info(grandchildId)).depth).toBe(2);
    await callTool(admin, "session", { action: "end", session_id: parent.sessionId });
    await until(async () => (await info(childId)).status === "ended", "the child ends");
    await until(async () => (await info(grandchildId)).status === "ended", "the grandchild ends");
  });
});

describe("a droid with a key wider than its project", () => {
  it("still starts its children in its own project", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject();
    const spawned = await callTool(admin, "session", {
      action: "spawn",
      project_id: projectId,
      oubliette_api_key: ADMIN_TOKEN,
    });
    const parent = await droidOf(
      host,
      z.object({ session_id: z.string() }).parse(spawned.structuredContent).session_id,
    );
    const elsewhere = await parent.spawn({ project_id: await createProject() });
    expect(elsewhere.isError).toBe(true);
    expect(elsewhere.content[0]?.text).toMatch(/starts sessions in its own project/);
  });
});

describe("through the droid's own socket (no key)", () => {
  it("session_message starts a child by the same path; session_events reads it with the children's", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject({ limits: { max_recursion_depth: 1, max_agents_per_session: 4 } });
    const spawned = await callTool(admin, "session", { action: "spawn", project_id: projectId });
    const parent = await droidOf(
      host,
      z.object({ session_id: z.string() }).parse(spawned.structuredContent).session_id,
    );
    const made = z
      .object({ session_id: z.string(), depth: z.number(), parent_session_id: z.string() })
      .passthrough()
      .parse(resultOf(await parent.tunnel.socket.ask("session_message", { message: "do the other half" })));
    expect(made).toMatchObject({ depth: 1, parent_session_id: parent.sessionId });
    expect(host.starts().find((s) => s.session_id === made.session_id)).toBeDefined();
    const child = await droidOf(host, made.session_id);
    await child.tunnel.events({ seq: 1, type: "message", text: "half done" });
    const read = z
      .object({ events: z.array(z.object({ session_id: z.string(), type: z.string() }).passthrough()) })
      .parse(resultOf(await parent.tunnel.socket.ask("session_events_read", {})));
    expect(read.events.some((e) => e.session_id === made.session_id && e.type === "message")).toBe(true);
    // The child is at the depth limit: its own session_message is refused, saying why.
    const deeper = await child.tunnel.socket.ask("session_message", { message: "and deeper" });
    expect(deeper).toMatchObject({
      kind: "error",
      error: {
        code: -32000,
        message: expect.stringContaining("max_recursion_depth 1"),
        data: { reason: "limit_exceeded" },
      },
    });
  });
});
