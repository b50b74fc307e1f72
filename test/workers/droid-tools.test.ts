/**
 * Oubliette's tools for droids, at the session object (what the host-agent passes on from the
 * container socket): the list a key sees, the same registry and access check as the MCP
 * endpoint, -32001 for a bad key (checked on every call, so revocation bites), -32002 for what its
 * scope does not allow, and the audit entry naming the key's token and the session.
 */

import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { errorOf, resultOf } from "./support/rpc-socket.js";
import { events, hostedSession } from "./support/session.js";
import { ADMIN_TOKEN, HOST_TOKEN } from "./support/tokens.js";

const ToolsSchema = z.object({
  tools: z.array(
    z.object({
      name: z.string(),
      inputSchema: z
        .object({
          properties: z
            .record(z.string(), z.object({ enum: z.array(z.string()).optional() }).passthrough())
            .optional(),
        })
        .passthrough(),
    }),
  ),
});

/** The session's project (a new one per test: a project sticks to the host it first ran on). */
let projectA = "";
let projectB = "";
let admin = "";

async function mint(scope: string): Promise<{ token: string; token_id: string }> {
  const created = await callTool(admin, "token", { action: "create", name: `key ${scope}`, scope });
  return z.object({ token: z.string(), token_id: z.string() }).parse(created.structuredContent);
}

beforeAll(async () => {
  admin = await initialize(ADMIN_TOKEN);
  projectB = await createProject();
});

afterEach(async () => {
  await disconnectAll();
});

async function session() {
  projectA = await createProject();
  return hostedSession({ projectId: projectA });
}

function actionsOf(listed: z.infer<typeof ToolsSchema>, tool: string): string[] | undefined {
  const found = listed.tools.find((t) => t.name === tool);
  if (!found) return undefined;
  return found.inputSchema.properties?.action?.enum ?? ["(single)"];
}

describe("oubliette_tools", () => {
  it("shows an admin key every tool but caller_tool_response and approval_response", async () => {
    const s = await session();
    const listed = ToolsSchema.parse(
      resultOf(await s.tunnel.socket.ask("oubliette_tools", { api_key: ADMIN_TOKEN })),
    );
    const names = listed.tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["project", "session", "container", "workspace", "token", "config_limits"]),
    );
    expect(names).not.toContain("caller_tool_response");
    expect(names).not.toContain("approval_response");
  });

  it("shows a project key only what its scope could allow, actions narrowed; a read-only key only reads", async () => {
    const s = await session();
    const writer = await mint(`project:${projectA}`);
    const listed = ToolsSchema.parse(
      resultOf(await s.tunnel.socket.ask("oubliette_tools", { api_key: writer.token })),
    );
    expect(listed.tools.map((t) => t.name)).not.toContain("token");
    expect(actionsOf(listed, "project")).not.toContain("create");
    expect(actionsOf(listed, "project")).toEqual(expect.arrayContaining(["get", "delete"]));
    expect(actionsOf(listed, "session")).toEqual(expect.arrayContaining(["spawn", "message", "get"]));
    const reader = await mint(`project:${projectA}:ro`);
    const read = ToolsSchema.parse(
      resultOf(await s.tunnel.socket.ask("oubliette_tools", { api_key: reader.token })),
    );
    expect(actionsOf(read, "session")).not.toContain("spawn");
    expect(actionsOf(read, "session")).toEqual(expect.arrayContaining(["get", "list", "events"]));
    expect(read.tools.map((t) => t.name)).not.toContain("image_rebuild");
  });

  it("refuses an unknown key, and a host token, with -32001", async () => {
    const s = await session();
    for (const key of [`oub_${"0".repeat(64)}`, "not-a-token", HOST_TOKEN]) {
      expect(errorOf(await s.tunnel.socket.ask("oubliette_tools", { api_key: key }))).toMatchObject({
        code: RpcErrorCode.InvalidApiKey,
        message: "invalid or expired API key",
      });
    }
  });

  it("tells the session's subscribers once that the droid's key was refused, and again after it worked", async () => {
    const s = await session();
    const refusals = async () =>
      (await events(s.sessionId)).events.filter(
        (e) => e.type === "system" && e.subtype === "oubliette_key_refused",
      );
    const bad = `oub_${"0".repeat(64)}`;
    await s.tunnel.socket.ask("oubliette_tools", { api_key: bad });
    await s.tunnel.socket.ask("oubliette_tools", { api_key: bad });
    expect(await refusals()).toHaveLength(1);
    expect((await refusals())[0]).toMatchObject({ message: expect.stringContaining("no Oubliette tools") });
    await s.tunnel.socket.ask("oubliette_tools", { api_key: ADMIN_TOKEN });
    await s.tunnel.socket.ask("oubliette_tools", { api_key: bad });
    expect(await refusals()).toHaveLength(2);
  });
});

describe("oubliette_call_tool", () => {
  const call = (
    s: Awaited<ReturnType<typeof session>>,
    key: string,
    tool: string,
    args: Record<string, unknown>,
  ) => s.tunnel.socket.ask("oubliette_call_tool", { api_key: key, tool, arguments: args });

  it("runs a tool the key allows, through the same dispatch as the MCP endpoint", async () => {
    const s = await session();
    const writer = await mint(`project:${projectA}`);
    const result = resultOf(await call(s, writer.token, "config_limits", { project_id: projectA })) as {
      isError?: boolean;
      structuredContent?: Record<string, unknown>;
    };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toHaveProperty("max_recursion_depth");
  });

  it("refuses with -32002 a write by a read-only key, another project, or an unknown tool or action", async () => {
    const s = await session();
    const reader = await mint(`project:${projectA}:ro`);
    const writer = await mint(`project:${projectA}`);
    expect(
      errorOf(await call(s, reader.token, "session", { action: "spawn", project_id: projectA })).code,
    ).toBe(RpcErrorCode.ToolNotAllowed);
    expect(errorOf(await call(s, writer.token, "config_limits", { project_id: projectB })).code).toBe(
      RpcErrorCode.ToolNotAllowed,
    );
    expect(errorOf(await call(s, writer.token, "token", { action: "list" })).code).toBe(
      RpcErrorCode.ToolNotAllowed,
    );
    expect(errorOf(await call(s, writer.token, "caller_tool_response", {})).code).toBe(
      RpcErrorCode.ToolNotAllowed,
    );
    expect(errorOf(await call(s, writer.token, "project", { action: "explode" })).code).toBe(
      RpcErrorCode.ToolNotAllowed,
    );
  });

  it("checks the key on every call: a revoked key stops working (-32001)", async () => {
    const s = await session();
    const writer = await mint(`project:${projectA}`);
    expect(resultOf(await call(s, writer.token, "config_limits", { project_id: projectA }))).toBeDefined();
    await callTool(admin, "token", { action: "revoke", token_id: writer.token_id });
    await until(
      async () => {
        const answer = await call(s, writer.token, "config_limits", { project_id: projectA });
        return answer.kind === "error" && answer.error.code === RpcErrorCode.InvalidApiKey;
      },
      "the revoked key is refused",
      2_000,
    );
  });

  it("audits a droid's mutating call with its key's token and the session it came from", async () => {
    const s = await session();
    const writer = await mint(`project:${projectA}`);
    resultOf(
      await call(s, writer.token, "session", { action: "cleanup", project_id: projectA, max_age_hours: 1 }),
    );
    await until(async () => {
      const listed = await callTool(admin, "audit", { token_id: writer.token_id });
      const entries = (listed.structuredContent?.entries ?? []) as {
        action: string;
        via_session: string | null;
      }[];
      return entries.some((e) => e.action === "session.cleanup" && e.via_session === s.sessionId);
    }, "the audit entry");
  });
});

describe("a session's own key", () => {
  it("is issued on spawn (oubliette_access), scoped to the project, never in an event, revoked when the session ends", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject();
    const mcp = await initialize();
    const spawned = await callTool(mcp, "session", {
      action: "spawn",
      project_id: projectId,
      oubliette_access: "project:ro",
    });
    const sessionId = z.object({ session_id: z.string() }).parse(spawned.structuredContent).session_id;
    const key = host.starts().at(-1)?.spec.env?.OUBLIETTE_API_KEY ?? "";
    expect(key).toMatch(/^oub_[0-9a-f]{64}$/);
    const tunnel = await SessionTunnel.open(sessionId);
    await tunnel.hello(host.hostId);
    const listed = ToolsSchema.parse(resultOf(await tunnel.socket.ask("oubliette_tools", { api_key: key })));
    expect(actionsOf(listed, "session")).not.toContain("spawn");
    expect(
      errorOf(
        await tunnel.socket.ask("oubliette_call_tool", {
          api_key: key,
          tool: "config_limits",
          arguments: { project_id: projectB },
        }),
      ).code,
    ).toBe(RpcErrorCode.ToolNotAllowed);
    const logged = await callTool(mcp, "session", { action: "events", session_id: sessionId });
    expect(JSON.stringify(logged)).not.toContain(key);
    await callTool(mcp, "session", { action: "end", session_id: sessionId });
    // Revoked, so it works nowhere now: the public routes refused it all along (it is bound to its
    // session, droid-key-binding.test.ts), so its status is what shows the revocation.
    await until(
      async () => {
        const listed = await callTool(mcp, "token", { action: "list", include_revoked: true });
        const tokens = z
          .object({
            tokens: z.array(z.looseObject({ session_id: z.string().nullable(), status: z.string() })),
          })
          .parse(listed.structuredContent).tokens;
        return tokens.find((t) => t.session_id === sessionId)?.status === "revoked";
      },
      "the session's key is revoked",
      1_000,
    );
  });

  it("may be a key the caller holds (passed as it is), but not a bad one, and not both ways at once", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject();
    const mcp = await initialize();
    const held = await mint(`project:${projectId}:ro`);
    await callTool(mcp, "session", { action: "spawn", project_id: projectId, oubliette_api_key: held.token });
    expect(host.starts().at(-1)?.spec.env?.OUBLIETTE_API_KEY).toBe(held.token);
    const bad = await callTool(mcp, "session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
      oubliette_api_key: `oub_${"1".repeat(64)}`,
    });
    expect(bad).toMatchObject({ isError: true, content: [{ text: expect.stringContaining("not a valid") }] });
    const both = await callTool(mcp, "session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
      oubliette_access: "project",
      oubliette_api_key: held.token,
    });
    expect(both).toMatchObject({ isError: true, content: [{ text: expect.stringContaining("not both") }] });
  });
});
