/**
 * Oubliette's tools in a droid's hands, end to end: the Worker under wrangler dev, a Docker
 * host-agent, the scripted droid in its container with the key spawn gave it. It lists exactly
 * what its key's scope allows, calls them, is refused -32002 beyond its scope, and -32001 once its
 * key is revoked, after which its Oubliette tools are gone (a refused key registers none). A key
 * spawn minted works only from inside its session: read out of the container, /mcp refuses it.
 */
import { describe, expect, it } from "vitest";
import { dockerStack } from "./docker-stack.js";
import { runStep, text } from "./support.js";

const e2e = dockerStack();

async function droidWith(projectId: string, key: Record<string, unknown>): Promise<string> {
  const { session_id } = await e2e.caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    ...key,
  });
  await e2e.caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
  return session_id;
}

async function toolNames(sessionId: string): Promise<string[]> {
  const listed = await runStep(e2e.caller, sessionId, { op: "list_tools" });
  return (listed.tools as { name: string }[]).map((t) => t.name);
}

describe("a droid with a key", () => {
  it("sees and uses exactly what a project key allows", async () => {
    const projectId = await e2e.caller.newProject();
    const sessionId = await droidWith(projectId, { oubliette_access: "project" });
    const waited = await runStep(e2e.caller, sessionId, {
      op: "wait_tool",
      name: "oubliette_workspace",
      timeout_ms: 20_000,
    });
    expect(waited.found).toBe(true);
    const names = await toolNames(sessionId);
    expect(names).toEqual(
      expect.arrayContaining(["oubliette_project", "oubliette_session", "oubliette_workspace"]),
    );
    expect(names).not.toContain("oubliette_token");
    expect(names).not.toContain("oubliette_caller_tool_response");
    // The key the droid holds works only on its own path: the public /mcp refuses it while it runs.
    const read = await runStep(e2e.caller, sessionId, {
      op: "exec",
      argv: ["node", "-e", "process.stdout.write(process.env.OUBLIETTE_API_KEY ?? '')"],
    });
    const key = String(read.stdout);
    expect(key).toMatch(/^oub_[0-9a-f]{64}$/);
    const outside = await fetch(e2e.stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "e2e", version: "1" },
        },
      }),
    });
    expect(outside.status).toBe(401);
    expect(await outside.text()).toContain(`this key was issued to session ${sessionId}`);
    const listed = await runStep(e2e.caller, sessionId, {
      op: "call",
      name: "oubliette_workspace",
      arguments: { action: "list", project_id: projectId },
    });
    expect(listed.is_error).toBe(false);
    expect(text(listed)).toContain("default");
    // It starts a child session in a workspace of its own making.
    const spawned = await runStep(e2e.caller, sessionId, {
      op: "call",
      name: "oubliette_session",
      arguments: {
        action: "spawn",
        project_id: projectId,
        workspace_id: "from-droid",
        create_workspace: true,
      },
    });
    expect(spawned.is_error).toBe(false);
    const child = JSON.parse(text(spawned)) as {
      session_id: string;
      parent_session_id: string;
      depth: number;
    };
    expect(child).toMatchObject({ parent_session_id: sessionId, depth: 1 });
    const workspaces = await e2e.caller.ok<{ workspaces: { workspace_id: string }[] }>("workspace", {
      action: "list",
      project_id: projectId,
    });
    expect(workspaces.workspaces.map((w) => w.workspace_id)).toContain("from-droid");
    // Ending the parent ends the child.
    await e2e.caller.ok("session", { action: "end", session_id: sessionId });
    const deadline = Date.now() + 20_000;
    let status = "";
    while (Date.now() < deadline && status !== "ended") {
      status = (
        await e2e.caller.ok<{ status: string }>("session", { action: "get", session_id: child.session_id })
      ).status;
      if (status !== "ended") await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe("ended");
  }, 120_000);

  it("is refused -32002 beyond a read-only key's scope, and -32001 once the key is revoked", async () => {
    const projectId = await e2e.caller.newProject();
    const minted = await e2e.caller.ok<{ token: string; token_id: string }>("token", {
      action: "create",
      name: "droid key",
      scope: `project:${projectId}:ro`,
    });
    const sessionId = await droidWith(projectId, { oubliette_api_key: minted.token });
    await runStep(e2e.caller, sessionId, { op: "wait_tool", name: "oubliette_session", timeout_ms: 20_000 });
    const spawn = await runStep(e2e.caller, sessionId, {
      op: "call",
      name: "oubliette_session",
      arguments: { action: "spawn", project_id: projectId },
    });
    expect(spawn.is_error).toBe(true);
    expect(text(spawn)).toContain("-32002");
    await e2e.caller.ok("token", { action: "revoke", token_id: minted.token_id });
    // Within 5 s the key works nowhere.
    const deadline = Date.now() + 5_000;
    let last = "";
    while (Date.now() < deadline) {
      const call = await runStep(e2e.caller, sessionId, {
        op: "call",
        name: "oubliette_session",
        arguments: { action: "list", project_id: projectId },
      });
      last = text(call);
      if (last.includes("-32001")) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(last).toContain("-32001");
    // A key the server refuses registers nothing: the droid's Oubliette tools are gone.
    const gone = Date.now() + 10_000;
    let names = await toolNames(sessionId);
    while (Date.now() < gone && names.some((n) => n.startsWith("oubliette_"))) {
      await new Promise((r) => setTimeout(r, 250));
      names = await toolNames(sessionId);
    }
    expect(names.filter((n) => n.startsWith("oubliette_"))).toEqual([]);
  }, 120_000);
});
