/**
 * `/mcp` in the stateless era (MCP 2026-07-28) beside the 2025 one: discovery, the per-request
 * envelope, the routing headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
 * `Mcp-Param-*`), caching hints, the errors of the revision (each echoing the request id), tool
 * calls that wait on their own stream, and what a stateless spawn defaults to.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { execArgs, getJob, listJobs, projectWithContainer } from "./support/jobs.js";
import { callTool, initialize, mcpFetch, rpc } from "./support/mcp.js";
import { okResult, pending } from "./support/mcp-spawn.js";
import { envelope, MODERN, modernFetch, modernRpc } from "./support/modern.js";
import { createProject } from "./support/projects.js";
import { SseReader } from "./support/sse.js";

const readers: SseReader[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.cancel()));
  await disconnectAll();
});

const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "oubliette-edge", version: "0.1.0" } };

const ToolResultSchema = z
  .object({
    resultType: z.literal("complete"),
    content: z.array(z.object({ type: z.literal("text"), text: z.string() })),
    structuredContent: z.record(z.string(), z.unknown()).optional(),
    isError: z.boolean().optional(),
  })
  .loose();

describe("server/discover", () => {
  it("answers the stateless revisions, the capabilities served, instructions, caching hints and who answered", async () => {
    const res = await modernFetch("server/discover");
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const body = (await res.json()) as { id: number; result: Record<string, unknown> };
    expect(body.result).toMatchObject({
      resultType: "complete",
      supportedVersions: [MODERN],
      capabilities: { tools: {} },
      ttlMs: 300_000,
      cacheScope: "public",
      _meta: SERVER_INFO,
    });
    expect(body.result.instructions).toContain("session events");
    // No 2025 handshake fields, and nothing this server cannot send (logging is per request only).
    expect(body.result).not.toHaveProperty("serverInfo");
    expect(body.result.capabilities).not.toHaveProperty("logging");
  });

  it("serves a request without clientInfo (it is optional)", async () => {
    const meta = envelope();
    delete meta["io.modelcontextprotocol/clientInfo"];
    const body = await modernRpc("server/discover", {}, { meta });
    expect(body.result?.supportedVersions).toEqual([MODERN]);
  });

  it("still needs a token: 401 tells the client how to sign in", async () => {
    const res = await modernFetch("server/discover", {}, { token: null });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain("resource_metadata");
  });
});

describe("the per-request envelope", () => {
  it.each([
    ["no _meta at all", null],
    ["_meta without protocolVersion", { "io.modelcontextprotocol/clientCapabilities": {} }],
    ["_meta without clientCapabilities", { "io.modelcontextprotocol/protocolVersion": MODERN }],
    [
      "clientCapabilities that are not an object",
      { ...envelope(), "io.modelcontextprotocol/clientCapabilities": [] },
    ],
    ["an unknown logLevel", { ...envelope(), "io.modelcontextprotocol/logLevel": "loud" }],
  ])("refuses %s with 400 and -32602, echoing the id", async (_, meta) => {
    const body = await modernRpc("server/discover", {}, { meta, id: "env-1", status: 400 });
    expect(body.id).toBe("env-1");
    expect(body.error?.code).toBe(McpErrorCode.invalidParams);
  });

  it("refuses a version it does not speak with 400 and -32022, listing what it speaks", async () => {
    const body = await modernRpc(
      "server/discover",
      {},
      {
        meta: envelope({}, "v999.0.0"),
        headers: { "mcp-protocol-version": "v999.0.0" },
        id: 301,
        status: 400,
      },
    );
    expect(body.id).toBe(301);
    expect(body.error).toMatchObject({
      code: McpErrorCode.unsupportedProtocolVersion,
      data: { supported: [MODERN], requested: "v999.0.0" },
    });
  });

  it("refuses a later, unknown stateless revision the same way", async () => {
    const body = await modernRpc(
      "server/discover",
      {},
      { meta: envelope({}, "2027-01-01"), headers: { "mcp-protocol-version": "2027-01-01" }, status: 400 },
    );
    expect(body.error?.code).toBe(McpErrorCode.unsupportedProtocolVersion);
  });
});

describe("standard headers", () => {
  const mismatch = async (
    method: string,
    params: Record<string, unknown>,
    headers: Record<string, string | null>,
  ) => {
    const body = await modernRpc(method, params, { headers, id: "h-1", status: 400 });
    expect(body.id).toBe("h-1");
    expect(body.error?.code).toBe(McpErrorCode.headerMismatch);
    return body.error?.message ?? "";
  };

  it("refuses an MCP-Protocol-Version that differs from the body's, or none", async () => {
    expect(await mismatch("server/discover", {}, { "mcp-protocol-version": "2025-11-25" })).toContain(
      "MCP-Protocol-Version",
    );
    expect(await mismatch("server/discover", {}, { "mcp-protocol-version": null })).toContain("required");
  });

  it("refuses a missing Mcp-Method, another method, or the right one in other case (values are case-sensitive)", async () => {
    await mismatch("tools/list", {}, { "mcp-method": null });
    await mismatch("tools/list", {}, { "mcp-method": "prompts/list" });
    await mismatch("tools/list", {}, { "mcp-method": "TOOLS/LIST" });
  });

  it("reads header names in any case", async () => {
    const res = await modernFetch(
      "tools/list",
      {},
      { headers: { "mcp-method": null, "MCP-METHOD": "tools/list" } },
    );
    expect(res.status).toBe(200);
  });

  it("needs Mcp-Name on tools/call, equal to params.name once trimmed and decoded", async () => {
    const call = { name: "project", arguments: { action: "list" } };
    expect(await mismatch("tools/call", call, { "mcp-name": null })).toContain("Mcp-Name");
    expect(await mismatch("tools/call", call, { "mcp-name": "session" })).toContain("does not match");
    for (const header of ["  project  ", "=?base64?cHJvamVjdA==?="]) {
      const res = await modernFetch("tools/call", call, { headers: { "mcp-name": header } });
      expect(res.status).toBe(200);
      expect(
        ToolResultSchema.parse(((await res.json()) as { result: unknown }).result).isError,
      ).toBeUndefined();
    }
  });

  it.each([
    ["bad padding", "=?base64?cHJvamVjdA?="],
    ["characters outside Base64", "=?base64?cHJv!!!amVjdA==?="],
  ])("refuses an Mcp-Name with %s", async (_, header) => {
    await mismatch("tools/call", { name: "project", arguments: { action: "list" } }, { "mcp-name": header });
  });

  it("takes a value that only looks like the sentinel as literal text", async () => {
    // Upper-case markers are not the sentinel: the literal value is compared (and differs).
    await mismatch(
      "tools/call",
      { name: "project", arguments: {} },
      { "mcp-name": "=?BASE64?cHJvamVjdA==?=" },
    );
  });
});

describe("Mcp-Param-Project-Id (x-mcp-header)", () => {
  it("is declared on project_id in the 2026 tools/list only", async () => {
    const modern = await modernRpc("tools/list");
    const tools = z
      .array(
        z.object({ name: z.string(), inputSchema: z.object({ properties: z.record(z.string(), z.any()) }) }),
      )
      .parse(modern.result?.tools);
    const project = tools.find((t) => t.name === "project");
    expect(project?.inputSchema.properties.project_id["x-mcp-header"]).toBe("Project-Id");
    const legacy = await rpc(await initialize(), "tools/list");
    expect(JSON.stringify(legacy.result)).not.toContain("x-mcp-header");
  });

  it("must accompany a project_id, with its value; is not expected without one", async () => {
    const projectId = await createProject();
    const call = { name: "project", arguments: { action: "get", project_id: projectId } };
    const missing = await modernRpc("tools/call", call, { status: 400 });
    expect(missing.error?.code).toBe(McpErrorCode.headerMismatch);
    const other = await modernRpc("tools/call", call, {
      headers: { "mcp-param-project-id": "prj_other" },
      status: 400,
    });
    expect(other.error?.message).toContain("does not match");
    const bad = await modernRpc("tools/call", call, {
      headers: { "mcp-param-project-id": "=?base64?x?=" },
      status: 400,
    });
    expect(bad.error?.code).toBe(McpErrorCode.headerMismatch);
    const ok = await modernRpc("tools/call", call, { headers: { "mcp-param-project-id": projectId } });
    expect(ToolResultSchema.parse(ok.result).structuredContent).toMatchObject({ project_id: projectId });
    const listed = await modernRpc("tools/call", { name: "project", arguments: { action: "list" } });
    expect(ToolResultSchema.parse(listed.result).isError).toBeUndefined();
  });
});

describe("methods", () => {
  it.each([
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "prompts/list",
    "unknown/method",
  ])("answers %s with 404 and -32601 in a JSON body, echoing the id", async (method) => {
    const res = await modernFetch(method, {}, { id: 500 });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as { id: number; error: { code: number } };
    expect(body).toMatchObject({ id: 500, error: { code: McpErrorCode.methodNotFound } });
  });

  it("refuses initialize under a stateless MCP-Protocol-Version with 400 and -32020", async () => {
    const res = await mcpFetch({
      headers: { "mcp-protocol-version": MODERN, "mcp-method": "initialize" },
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: "t", version: "1" } },
      },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(McpErrorCode.headerMismatch);
  });

  it("accepts a notification with 202 and no body", async () => {
    const res = await mcpFetch({
      headers: { "mcp-protocol-version": MODERN, "mcp-method": "notifications/cancelled" },
      body: {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: 1, _meta: envelope() },
      },
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  it("has no session stream: GET with a stateless version is 405", async () => {
    const res = await mcpFetch({ method: "GET", headers: { "mcp-protocol-version": MODERN } });
    expect(res.status).toBe(405);
  });

  it("lists the same tools as the 2025 era, with caching hints", async () => {
    const modern = await modernRpc("tools/list");
    expect(modern.result).toMatchObject({
      resultType: "complete",
      ttlMs: 300_000,
      cacheScope: "public",
      _meta: SERVER_INFO,
    });
    const legacy = await rpc(await initialize(), "tools/list");
    const names = (list: unknown) =>
      z
        .array(z.object({ name: z.string() }))
        .parse(list)
        .map((t) => t.name);
    expect(names(modern.result?.tools)).toEqual(names((legacy.result as { tools: unknown }).tools));
  });

  it("runs tools/call through the same dispatch: what one request creates, the next one reads", async () => {
    const name = `modern-${crypto.randomUUID().slice(0, 8)}`;
    const created = await modernRpc("tools/call", { name: "project", arguments: { action: "create", name } });
    const projectId = z.string().parse(ToolResultSchema.parse(created.result).structuredContent?.project_id);
    expect(created.result).toMatchObject({ _meta: SERVER_INFO });
    const got = await modernRpc(
      "tools/call",
      { name: "project", arguments: { action: "get", project_id: projectId } },
      { headers: { "mcp-param-project-id": projectId } },
    );
    expect(ToolResultSchema.parse(got.result).structuredContent).toMatchObject({
      project_id: projectId,
      name,
    });
  });

  it("answers an unknown tool with -32602", async () => {
    const body = await modernRpc("tools/call", { name: "no_such_tool", arguments: {} });
    expect(body.error?.code).toBe(McpErrorCode.invalidParams);
  });
});

describe("calls that wait", () => {
  it("stream progress on their own response (no event ids: nothing to resume) and end with the result", async () => {
    const { host, projectId } = await projectWithContainer();
    const res = await modernFetch(
      "tools/call",
      { name: "container", arguments: execArgs(projectId) },
      { headers: { "mcp-param-project-id": projectId }, meta: { ...envelope(), progressToken: "p-1" } },
    );
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const raw = await res.text();
    expect(raw).not.toMatch(/^id:/m);
    expect(raw).toContain('"method":"notifications/progress"');
    expect(raw).toContain('"progressToken":"p-1"');
    // The job outlived the wait bound: the final answer points at it.
    const final = JSON.parse(
      raw
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .at(-1)
        ?.slice(6) ?? "{}",
    );
    expect(final.result).toMatchObject({
      resultType: "complete",
      _meta: { "oubliette/job_id": expect.any(String) },
    });
    host.close();
  });

  it("closing the response stream cancels the request, and with it the job", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const res = await modernFetch(
      "tools/call",
      { name: "container", arguments: execArgs(projectId) },
      { headers: { "mcp-param-project-id": projectId } },
    );
    const reader = new SseReader(res.body);
    await vi.waitFor(() => expect(reader.comments).toBeGreaterThan(0), { timeout: 5_000 });
    await reader.cancel();
    await host.socket.nextNotification("notifications/cancelled");
    const [job] = await listJobs(mcp, projectId, "cancelled");
    expect(job?.cancel?.reason).toContain("closed the response stream");
    expect((await getJob(mcp, z.string().parse(job?.job_id))).status).toBe("cancelled");
    host.close();
  });
});

describe("a stateless caller's sessions", () => {
  it("default to caller_presence deadline (no stream to be present on); an explicit choice stands", async () => {
    const host = await FakeHost.connect(uniqueHostId("modern"));
    const projectId = await createProject();
    const spawn = async (extra: Record<string, unknown>) => {
      const body = await modernRpc(
        "tools/call",
        {
          name: "session",
          arguments: {
            action: "spawn",
            project_id: projectId,
            caller_id: "ant",
            caller_tools: [{ name: "send_response", inputSchema: { type: "object" } }],
            ...extra,
          },
        },
        { headers: { "mcp-param-project-id": projectId } },
      );
      return z.string().parse(okResult(ToolResultSchema.parse(body.result) as never).session_id);
    };
    const mcp = await initialize();
    expect((await pending(mcp, await spawn({}))).caller_presence).toBe("deadline");
    expect((await pending(mcp, await spawn({ caller_presence: "stream" }))).caller_presence).toBe("stream");
    const legacy = okResult(
      await callTool(mcp, "session", {
        action: "spawn",
        project_id: projectId,
        caller_id: "ant",
        caller_tools: [{ name: "send_response", inputSchema: { type: "object" } }],
      }),
    );
    expect((await pending(mcp, z.string().parse(legacy.session_id))).caller_presence).toBe("stream");
    host.close();
  });
});
