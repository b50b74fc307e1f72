/**
 * A key the Worker mints for a session's droid (`oubliette_access`) works only on that session's
 * own path (container socket → host → session tunnel → session object): every public route
 * refuses it with 401 and says why (/mcp in both eras, /v1, the console's and OAuth's sign-in,
 * the console API), another session's object refuses it with -32001, and a key the caller passed
 * (`oubliette_api_key`) stays the caller's own and keeps working everywhere.
 */
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { sha256Hex } from "../../worker/src/auth/digest.js";
import { objects } from "../../worker/src/objects/keys.js";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { BASE } from "./support/frame-socket.js";
import { callTool, initialize, initializeRequest, mcpFetch } from "./support/mcp.js";
import { modernFetch } from "./support/modern.js";
import { createProject } from "./support/projects.js";
import { errorOf, resultOf } from "./support/rpc-socket.js";

const ORIGIN = new URL(BASE).origin;
const ErrorBodySchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
const SpawnedSchema = z.object({ session_id: z.string() });

afterEach(async () => {
  await disconnectAll();
});

/** The reason every public route gives for a session's key. */
function reasonFor(sessionId: string): string {
  return `this key was issued to session ${sessionId} and works only from inside that session`;
}

/**
 * Spawns a session through MCP as the product does, on `host`, and opens its tunnel; the key is
 * the one the host was told to put in the droid's environment.
 */
async function spawnWith(host: FakeHost, mcp: string, args: Record<string, unknown>) {
  const spawned = await callTool(mcp, "session", { action: "spawn", new_session: true, ...args });
  if (spawned.isError) throw new Error(`spawn failed: ${spawned.content[0]?.text}`);
  const { session_id: sessionId } = SpawnedSchema.parse(spawned.structuredContent);
  const start = host.starts().find((s) => s.session_id === sessionId);
  const key = start?.spec.env?.OUBLIETTE_API_KEY ?? "";
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(host.hostId);
  return { sessionId, key, tunnel };
}

/** A project, its host, and a session of it with a key minted for its droid. */
async function keyedSession(access = "project") {
  const host = await FakeHost.connect(uniqueHostId());
  const projectId = await createProject();
  const mcp = await initialize();
  const session = await spawnWith(host, mcp, { project_id: projectId, oubliette_access: access });
  expect(session.key).toMatch(/^oub_[0-9a-f]{64}$/);
  return { host, projectId, mcp, ...session };
}

/** A 401 whose JSON body gives `reason`. */
async function expectRefused(res: Response, reason: string): Promise<void> {
  expect(res.status).toBe(401);
  const body = ErrorBodySchema.parse(await res.json());
  expect(body.error).toEqual({ code: "unauthorized", message: reason });
}

/** The droid's call of an Oubliette tool over the session tunnel, as the host passes it on. */
function droidCall(tunnel: SessionTunnel, key: string, projectId: string) {
  return tunnel.socket.ask("oubliette_call_tool", {
    api_key: key,
    tool: "config_limits",
    arguments: { project_id: projectId },
  });
}

describe("a session's minted key, on the public routes", () => {
  it("is refused on /mcp in both eras: 401 with the reason and the endpoint's Bearer challenge", async () => {
    const s = await keyedSession("project:ro");
    const legacy = await mcpFetch({ token: s.key, body: initializeRequest() });
    expect(legacy.headers.get("mcp-session-id")).toBeNull();
    const challenge = legacy.headers.get("www-authenticate") ?? "";
    expect(challenge).toMatch(/^Bearer realm="oubliette"/);
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain("resource_metadata=");
    await expectRefused(legacy, reasonFor(s.sessionId));
    const modern = await modernFetch("tools/list", {}, { token: s.key });
    expect(modern.headers.get("www-authenticate")).toBe(challenge);
    await expectRefused(modern, reasonFor(s.sessionId));
    // Nor does it open an existing MCP session someone else made.
    const other = await mcpFetch({
      token: s.key,
      session: s.mcp,
      body: { jsonrpc: "2.0", id: 2, method: "tools/list" },
    });
    await expectRefused(other, reasonFor(s.sessionId));
  });

  it("is refused on /v1: its own session's event stream and /v1/hosts/self", async () => {
    const s = await keyedSession("project:ro");
    const headers = { authorization: `Bearer ${s.key}` };
    const events = await exports.default.fetch(`${BASE}/v1/sessions/${s.sessionId}/events`, { headers });
    expect(events.headers.get("www-authenticate")).toContain('error="invalid_token"');
    await expectRefused(events, reasonFor(s.sessionId));
    const hostSelf = await exports.default.fetch(`${BASE}/v1/hosts/self`, { headers });
    expect(hostSelf.headers.get("www-authenticate")).toBe('Bearer realm="oubliette"');
    await expectRefused(hostSelf, reasonFor(s.sessionId));
  });

  it("signs nobody in to the console or an app, and a sign-in made with it opens no console API", async () => {
    const s = await keyedSession();
    // The sign-in form (the console's, and OAuth's "sign in with a token").
    const page = await exports.default.fetch(`${BASE}/`);
    const csrf = /name="csrf" value="([0-9a-f]+)"/.exec(await page.text())?.[1] ?? "";
    const csrfCookie = page.headers
      .getSetCookie()
      .find((line) => line.includes("csrf="))
      ?.split(";")[0];
    const signIn = await exports.default.fetch(`${BASE}/oauth/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: ORIGIN,
        cookie: csrfCookie ?? "",
      },
      body: new URLSearchParams({ csrf, return_to: "/", token: s.key }).toString(),
    });
    expect(signIn.status).toBe(401);
    expect(await signIn.text()).toContain(reasonFor(s.sessionId));
    expect(signIn.headers.getSetCookie().some((line) => line.includes("signin="))).toBe(false);
    // A sign-in with the key that exists anyway (made before keys were bound) opens nothing.
    const listed = await callTool(s.mcp, "token", { action: "list" });
    const tokens = z
      .object({ tokens: z.array(z.looseObject({ token_id: z.string(), session_id: z.string().nullable() })) })
      .parse(listed.structuredContent).tokens;
    const tokenId = tokens.find((t) => t.session_id === s.sessionId)?.token_id ?? "";
    expect(tokenId).toMatch(/^tok_/);
    const value = "a".repeat(64);
    await objects
      .tokens(env)
      .createSignin(await sha256Hex(value), { tokenId, issued: true, expiresAt: Date.now() + 60_000 });
    const me = await exports.default.fetch(`${BASE}/console/api/me`, {
      headers: { cookie: `__Host-oub-signin=${value}` },
    });
    await expectRefused(me, reasonFor(s.sessionId));
  });
});

describe("a session's minted key, on the droid's path", () => {
  it("works through its own session object", async () => {
    const s = await keyedSession();
    const listed = z
      .object({ tools: z.array(z.object({ name: z.string() })) })
      .parse(resultOf(await s.tunnel.socket.ask("oubliette_tools", { api_key: s.key })));
    expect(listed.tools.map((t) => t.name)).toContain("session");
    const result = z
      .object({ isError: z.boolean().optional(), structuredContent: z.record(z.string(), z.unknown()) })
      .parse(resultOf(await droidCall(s.tunnel, s.key, s.projectId)));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toHaveProperty("max_recursion_depth");
  });

  it("is refused by another session of the same project with -32001, and cannot be handed to one", async () => {
    const s = await keyedSession();
    const other = await spawnWith(s.host, s.mcp, { project_id: s.projectId, oubliette_access: "project" });
    const refusal = {
      code: RpcErrorCode.InvalidApiKey,
      message: expect.stringContaining("issued to another session"),
    };
    expect(errorOf(await droidCall(other.tunnel, s.key, s.projectId))).toMatchObject(refusal);
    expect(errorOf(await other.tunnel.socket.ask("oubliette_tools", { api_key: s.key }))).toMatchObject(
      refusal,
    );
    // Its own key works there, and the first key still works in its own session.
    expect(resultOf(await droidCall(other.tunnel, other.key, s.projectId))).toBeDefined();
    expect(resultOf(await droidCall(s.tunnel, s.key, s.projectId))).toBeDefined();
    const handed = await callTool(s.mcp, "session", {
      action: "spawn",
      project_id: s.projectId,
      new_session: true,
      oubliette_api_key: s.key,
    });
    expect(handed).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining(reasonFor(s.sessionId)) }],
    });
  });
});

describe("a key the caller passes (oubliette_api_key)", () => {
  it("stays the caller's own: it works on /mcp in both eras and on the droid's path", async () => {
    const host = await FakeHost.connect(uniqueHostId());
    const projectId = await createProject();
    const mcp = await initialize();
    const created = await callTool(mcp, "token", {
      action: "create",
      name: "held",
      scope: `project:${projectId}`,
    });
    const held = z.object({ token: z.string() }).parse(created.structuredContent).token;
    const s = await spawnWith(host, mcp, { project_id: projectId, oubliette_api_key: held });
    expect(s.key).toBe(held);
    expect(resultOf(await droidCall(s.tunnel, held, projectId))).toBeDefined();
    expect(await initialize(held)).toMatch(/^[0-9a-f-]{36}$/);
    const modern = await modernFetch("tools/list", {}, { token: held });
    expect(modern.status).toBe(200);
    await modern.body?.cancel();
  });
});
