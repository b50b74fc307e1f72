/**
 * Signing in from an MCP client (OAuth 2.1) against the Worker under wrangler dev: the official
 * SDK client's OAuth support as the client, a real Chromium filling in the sign-in and consent
 * pages, CIMD documents served over https on loopback (the Worker trusts a throwaway CA and the
 * local-development setting allows loopback client URLs), DCR, a host-agent with the process
 * runtime for a relay round trip. Then refresh, revocation (a request, an open stream, a long
 * poll), grants as principals, and the bad inputs each refused with a clear OAuth error.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { TestCaller } from "../support/caller.js";
import {
  authorizeInBrowser,
  BrowserOAuthClient,
  type Callback,
  pkce,
  startCallback,
} from "../support/oauth-client.js";
import { TestStack } from "../support/stack.js";
import { type LoopbackTls, loopbackTls } from "../support/tls-cert.js";
import { runStep, spawnDroid } from "./support.js";

let stack: TestStack;
let admin: TestCaller;
let browser: Browser;
let tls: LoopbackTls;
let documents: HttpsServer;
let callback: Callback;
let origin = "";
let documentsOrigin = "";

/** CIMD documents by path; each names its own URL as client_id unless it is the mismatch one. */
function clientDocument(path: string): { status: number; body: string; delayMs?: number } {
  const url = `${documentsOrigin}${path}`;
  const base = {
    client_id: url,
    client_name: "Oubliette test client (CIMD)",
    redirect_uris: [callback.url],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  switch (path) {
    case "/client.json":
      return { status: 200, body: JSON.stringify(base) };
    case "/mismatch.json":
      return {
        status: 200,
        body: JSON.stringify({ ...base, client_id: `${documentsOrigin}/someone-else.json` }),
      };
    case "/oversized.json":
      return {
        status: 200,
        body: JSON.stringify({ ...base, client_uri: `https://example.com/${"x".repeat(6_000)}` }),
      };
    case "/slow.json":
      return { status: 200, body: JSON.stringify(base), delayMs: 12_000 };
    default:
      return { status: 404, body: "{}" };
  }
}

beforeAll(async () => {
  tls = await loopbackTls();
  callback = await startCallback();
  documents = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const doc = clientDocument(new URL(req.url ?? "/", documentsOrigin).pathname);
    const timer = setTimeout(() => {
      res.writeHead(doc.status, { "content-type": "application/json" });
      res.end(doc.body);
    }, doc.delayMs ?? 0);
    res.on("close", () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
  documentsOrigin = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`;
  stack = await TestStack.start({
    vars: { OUBLIETTE_OAUTH_DEV_CLIENTS: "1" },
    wranglerEnv: { NODE_EXTRA_CA_CERTS: tls.caFile },
  });
  origin = new URL(stack.mcpUrl).origin;
  await stack.addHost({ runtime: "process" });
  admin = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await admin?.close();
  await stack?.stop();
  documents?.closeAllConnections();
  await new Promise<void>((resolve) => (documents ? documents.close(() => resolve()) : resolve()));
  await callback?.close();
  await tls?.remove();
});

/** Signs a client in through the SDK (401, discovery, registration or CIMD, browser, code exchange). */
async function signIn(
  context: BrowserContext,
  person: { token: string; scopes?: string[] },
  clientMetadataUrl?: string,
): Promise<BrowserOAuthClient> {
  const provider = new BrowserOAuthClient(context, callback.url, person, clientMetadataUrl);
  const first = new StreamableHTTPClientTransport(stack.mcpUrl, { authProvider: provider });
  await expect(new Client({ name: "oauth-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(
    UnauthorizedError,
  );
  await first.finishAuth(provider.lastCode());
  return provider;
}

/** An MCP client that presents the provider's tokens. */
async function connected(provider: BrowserOAuthClient): Promise<Client> {
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(stack.mcpUrl, { authProvider: provider }));
  return client;
}

/** POST /mcp initialize with a bearer token: its HTTP status. */
async function initializeStatus(token: string): Promise<number> {
  const res = await fetch(stack.mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "probe", version: "1" },
      },
    }),
  });
  await res.body?.cancel();
  return res.status;
}

/** Polls until `check` holds (every 100 ms, at most `limitMs`); how long it took. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`still not so after ${limitMs} ms`);
}

async function tokenEndpoint(
  body: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${origin}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("discovery", () => {
  it("answers an unauthenticated /mcp with a 401 naming its metadata, which leads to this authorization server", async () => {
    const res = await fetch(stack.mcpUrl, { method: "POST", body: "{}" });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate") ?? "";
    expect(challenge).toContain(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
    expect(challenge).toContain('scope="admin:ro"');
    for (const path of [
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource",
    ]) {
      const metadata = (await (await fetch(`${origin}${path}`)).json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({ resource: `${origin}/mcp`, authorization_servers: [origin] });
    }
    const server = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(server).toMatchObject({
      issuer: origin,
      authorization_endpoint: `${origin}/oauth/authorize`,
      token_endpoint: `${origin}/oauth/token`,
      registration_endpoint: `${origin}/oauth/register`,
      client_id_metadata_document_supported: true,
      code_challenge_methods_supported: ["S256"],
    });
    expect(server.scopes_supported).toEqual(expect.arrayContaining(["admin", "admin:ro"]));
  });
});

describe("a CIMD client", () => {
  let context: BrowserContext;
  let provider: BrowserOAuthClient;

  beforeAll(async () => {
    context = await browser.newContext();
  });
  afterAll(async () => {
    await context?.close();
  });

  it("signs in with the SDK: consent in Chromium names the client's domain; tools/list; a relay round trip", async () => {
    provider = await signIn(
      context,
      { token: stack.adminToken, scopes: ["admin"] },
      `${documentsOrigin}/client.json`,
    );
    const consent = provider.visits[0]?.consentText ?? "";
    expect(consent).toContain("Oubliette test client (CIMD)");
    expect(consent).toContain("Published by 127.0.0.1");
    expect(consent).toContain(callback.url);
    const client = await connected(provider);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(["session", "project", "caller_tool_response"]));
    await client.close();
    // The access token is a caller like any: a droid's call of its tool reaches it and comes back.
    const caller = await TestCaller.connect(stack.mcpUrl, provider.tokens()?.access_token ?? "");
    try {
      caller.answerWith((request) => ({ result: `oauth caller got ${JSON.stringify(request.arguments)}` }));
      const sessionId = await spawnDroid(caller);
      const out = await runStep(caller, sessionId, {
        op: "call",
        name: "ant_send_response",
        arguments: { message: "through OAuth" },
      });
      expect(out.is_error).toBe(false);
      expect(JSON.stringify(out)).toContain("oauth caller got");
    } finally {
      await caller.close();
    }
  }, 180_000);

  it("is listed as a grant (client, scopes, who signed in), and refreshes with a rotated refresh token", async () => {
    const listed = await admin.ok<{ grants: Record<string, unknown>[] }>("token", { action: "list" });
    const grant = listed.grants.find((g) => g.client_id === `${documentsOrigin}/client.json`);
    expect(grant).toMatchObject({
      client_name: "Oubliette test client (CIMD)",
      client_verified: true,
      scopes: ["admin"],
      signed_in_as: "admin",
      status: "active",
    });
    expect(grant?.last_used_at).not.toBeNull();
    const old = provider.tokens();
    const refreshed = await tokenEndpoint({
      grant_type: "refresh_token",
      refresh_token: old?.refresh_token ?? "",
      client_id: `${documentsOrigin}/client.json`,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.refresh_token).not.toBe(old?.refresh_token);
    expect(await initializeStatus(String(refreshed.json.access_token))).toBe(200);
    // The old refresh token, used again: a replay. The whole grant goes.
    const replay = await tokenEndpoint({
      grant_type: "refresh_token",
      refresh_token: old?.refresh_token ?? "",
      client_id: `${documentsOrigin}/client.json`,
    });
    expect(replay).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    await within(3_000, async () => (await initializeStatus(String(refreshed.json.access_token))) === 401);
    const after = await admin.ok<{ grants: Record<string, unknown>[] }>("token", {
      action: "list",
      include_revoked: true,
    });
    expect(after.grants.find((g) => g.grant_id === grant?.grant_id)?.status).toBe("revoked");
  }, 120_000);
});

describe("a DCR client", () => {
  it("registers itself, is shown as unverified, and gets only the scopes the person ticked", async () => {
    const context = await browser.newContext();
    try {
      const provider = await signIn(context, { token: stack.adminToken, scopes: ["admin:ro"] });
      expect(provider.visits[0]?.consentText).toContain("Unverified");
      const client = await connected(provider);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      // admin:ro cannot create a project: a step-up challenge names the scope it needs.
      const res = await fetch(stack.mcpUrl, {
        method: "POST",
        headers: {
          authorization: `Bearer ${provider.tokens()?.access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id":
            client.transport instanceof StreamableHTTPClientTransport
              ? (client.transport.sessionId ?? "")
              : "",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 9,
          method: "tools/call",
          params: { name: "project", arguments: { action: "create", name: "step-up" } },
        }),
      });
      expect(res.status).toBe(403);
      const challenge = res.headers.get("www-authenticate") ?? "";
      expect(challenge).toContain('error="insufficient_scope"');
      expect(challenge).toContain('scope="admin:ro admin"');
      await client.close();
    } finally {
      await context.close();
    }
  }, 120_000);
});

describe("a pre-registered client", () => {
  it("is registered by an admin and signs in with its client id, PKCE and the page's consent", async () => {
    const registered = await admin.ok<{ client_id: string; client_secret?: string }>("token", {
      action: "register_client",
      client_name: "Pre-registered dashboard",
      redirect_uris: [callback.url],
    });
    expect(registered.client_secret).toBeUndefined();
    const { verifier, challenge } = pkce();
    const context = await browser.newContext();
    try {
      const url = `${origin}/oauth/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: registered.client_id,
        redirect_uri: callback.url,
        state: "pre",
        code_challenge: challenge,
        code_challenge_method: "S256",
        resource: `${origin}/mcp`,
        scope: "admin:ro",
      })}`;
      const seen = await authorizeInBrowser(context, url, { token: stack.adminToken }, callback.url);
      expect(seen.consentText).toContain("Pre-registered dashboard");
      const code = new URL(seen.finalUrl).searchParams.get("code") ?? "";
      const exchanged = await tokenEndpoint({
        grant_type: "authorization_code",
        code,
        redirect_uri: callback.url,
        client_id: registered.client_id,
        code_verifier: verifier,
      });
      expect(exchanged).toMatchObject({ status: 200, json: { scope: "admin:ro" } });
      expect(await initializeStatus(String(exchanged.json.access_token))).toBe(200);
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe("revocation", () => {
  it("stops a grant within 2 s on a request, an open stream and a long poll", async () => {
    const context = await browser.newContext();
    try {
      const provider = await signIn(context, { token: stack.adminToken, scopes: ["admin"] });
      const token = provider.tokens()?.access_token ?? "";
      const caller = await TestCaller.connect(stack.mcpUrl, token, "revoked-caller", {
        reconnectAttempts: 0,
      });
      const sessionId = await spawnDroid(caller);
      const closed = new Promise<void>((resolve) => {
        caller.transport.onclose = () => resolve();
        caller.transport.onerror = () => resolve();
      });
      const poll = caller.call("session", {
        action: "events",
        session_id: sessionId,
        since_index: 1_000_000,
        wait_seconds: 30,
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const grantId = (
        await admin.ok<{ grants: { grant_id: string; status: string }[] }>("token", { action: "list" })
      ).grants
        .filter((g) => g.status === "active")
        .at(-1)?.grant_id;
      const revokedAt = Date.now();
      await admin.ok("token", { action: "revoke", token_id: grantId });
      const polled = await poll.catch((error: unknown) => ({ isError: true, error }));
      expect(Date.now() - revokedAt).toBeLessThan(4_000);
      expect(JSON.stringify(polled)).toMatch(/revoked|unauthorized|401/i);
      expect(await within(2_500, async () => (await initializeStatus(token)) === 401)).toBeLessThan(2_500);
      await Promise.race([
        closed,
        new Promise((_, reject) => setTimeout(() => reject(new Error("stream stayed open")), 8_000)),
      ]);
      await caller.close().catch(() => {});
    } finally {
      await context.close();
    }
  }, 180_000);

  it("revokes the grants made with an API token when that token is revoked; a long poll with the token ends too", async () => {
    const made = await admin.ok<{ token: string; token_id: string }>("token", {
      action: "create",
      name: "signs-in",
      scope: "admin",
    });
    const context = await browser.newContext();
    try {
      const provider = await signIn(context, { token: made.token, scopes: ["admin:ro"] });
      const oauthToken = provider.tokens()?.access_token ?? "";
      expect(await initializeStatus(oauthToken)).toBe(200);
      const caller = await TestCaller.connect(stack.mcpUrl, made.token, "api-token-caller", {
        reconnectAttempts: 0,
      });
      const sessionId = await spawnDroid(caller);
      const poll = caller.call("session", {
        action: "events",
        session_id: sessionId,
        since_index: 1_000_000,
        wait_seconds: 30,
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const revokedAt = Date.now();
      await admin.ok("token", { action: "revoke", token_id: made.token_id });
      const polled = await poll.catch((error: unknown) => ({ isError: true, error }));
      expect(Date.now() - revokedAt).toBeLessThan(4_000);
      expect(JSON.stringify(polled)).toMatch(/revoked|unauthorized|401/i);
      await within(2_500, async () => (await initializeStatus(oauthToken)) === 401);
      const grants = (
        await admin.ok<{ grants: { signed_in_as: string; status: string }[] }>("token", {
          action: "list",
          include_revoked: true,
        })
      ).grants.filter((g) => g.signed_in_as === made.token_id);
      expect(grants.length).toBeGreaterThan(0);
      expect(grants.every((g) => g.status === "revoked")).toBe(true);
      await caller.close().catch(() => {});
    } finally {
      await context.close();
    }
  }, 180_000);
});

describe("the audit log", () => {
  it("records grants issued, refreshed and revoked, each with its client", async () => {
    const page = await admin.ok<{ entries: { action: string; target: string | null; outcome: string }[] }>(
      "audit",
      {
        limit: 500,
      },
    );
    const cimd = `client=${documentsOrigin}/client.json`;
    const of = (action: string) => page.entries.filter((e) => e.action === action);
    expect(of("oauth.sign_in").length).toBeGreaterThan(0);
    expect(of("oauth.grant_issued").some((e) => e.target?.includes(cimd))).toBe(true);
    expect(of("oauth.grant_refreshed").some((e) => e.target?.includes(cimd) && e.outcome === "ok")).toBe(
      true,
    );
    const revoked = of("oauth.grant_revoked");
    expect(revoked.some((e) => e.target?.includes(cimd) && e.outcome === "refresh_token_replayed")).toBe(
      true,
    );
    expect(revoked.some((e) => e.outcome === "revoked" && /client=\S+/.test(e.target ?? ""))).toBe(true);
    expect(revoked.some((e) => e.outcome === "signing_token_revoked")).toBe(true);
  });
});

describe("bad input, each refused with nothing granted", () => {
  /** Registers a DCR client (raw) and returns its id. */
  async function register(): Promise<string> {
    const res = await fetch(`${origin}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "raw client",
        redirect_uris: [callback.url],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }),
    });
    expect(res.status).toBe(201);
    return String(((await res.json()) as { client_id: string }).client_id);
  }

  function authorizeUrl(params: Record<string, string>): string {
    return `${origin}/oauth/authorize?${new URLSearchParams({
      response_type: "code",
      redirect_uri: callback.url,
      state: "s1",
      code_challenge_method: "S256",
      resource: `${origin}/mcp`,
      scope: "admin:ro",
      ...params,
    })}`;
  }

  it("a wrong PKCE verifier, a code whose grant expired, then a code used twice", async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const context = await browser.newContext();
    try {
      const visit = await authorizeInBrowser(
        context,
        authorizeUrl({ client_id: clientId, code_challenge: challenge }),
        { token: stack.adminToken },
        callback.url,
      );
      const code = new URL(visit.finalUrl).searchParams.get("code") ?? "";
      expect(code).not.toBe("");
      const exchange = (v: string) =>
        tokenEndpoint({
          grant_type: "authorization_code",
          code,
          redirect_uri: callback.url,
          client_id: clientId,
          code_verifier: v,
        });
      expect(await exchange(pkce().verifier)).toMatchObject({
        status: 400,
        json: { error: "invalid_grant" },
      });
      // An expired code: the library keeps an unexchanged code's grant 10 minutes (a KV expiry),
      // after which the code names a grant that is gone — as this one does.
      const [user, , secret] = code.split(":");
      expect(
        await tokenEndpoint({
          grant_type: "authorization_code",
          code: `${user}:${"0".repeat(32)}:${secret}`,
          redirect_uri: callback.url,
          client_id: clientId,
          code_verifier: verifier,
        }),
      ).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
      const good = await exchange(verifier);
      // A wrong verifier may burn the code (the library revokes on misuse): either way no token twice.
      if (good.status === 200) {
        expect(await exchange(verifier)).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
        await within(2_500, async () => (await initializeStatus(String(good.json.access_token))) === 401);
      } else {
        expect(good).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
      }
    } finally {
      await context.close();
    }
  }, 120_000);

  it("a redirect URI that is not the client's, and a resource that is not /mcp", async () => {
    const clientId = await register();
    const { challenge } = pkce();
    const context = await browser.newContext();
    try {
      const wrongRedirect = await authorizeInBrowser(
        context,
        authorizeUrl({
          client_id: clientId,
          code_challenge: challenge,
          redirect_uri: "http://127.0.0.1:1/elsewhere",
        }),
        { token: stack.adminToken },
        callback.url,
      );
      expect(wrongRedirect.finalUrl).toContain("/oauth/authorize");
      expect(wrongRedirect.finalText).toMatch(/redirect/i);
      const wrongResource = await authorizeInBrowser(
        context,
        authorizeUrl({
          client_id: clientId,
          code_challenge: challenge,
          resource: "http://127.0.0.1:9/other",
        }),
        { token: stack.adminToken },
        callback.url,
      );
      expect(new URL(wrongResource.finalUrl).searchParams.get("error")).toBe("invalid_target");
    } finally {
      await context.close();
    }
  }, 60_000);

  it("scopes beyond the token signed in with, a consent form without its handle, a sign-in form without its CSRF token", async () => {
    const project = await admin.newProject();
    const narrow = await admin.ok<{ token: string }>("token", {
      action: "create",
      name: "narrow",
      scope: `project:${project}:ro`,
    });
    const clientId = await register();
    const { challenge } = pkce();
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(authorizeUrl({ client_id: clientId, code_challenge: challenge }));
      await page.fill("#token", narrow.token);
      // waitForLoadState would see the sign-in page, still loaded: wait for the consent page itself.
      await page.click("button[type=submit]");
      await page.locator("input[name=scope]").first().waitFor({ state: "attached" });
      const offered = await page
        .locator("input[name=scope]")
        .evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value));
      expect(offered).toEqual([`project:${project}:ro`]);
      // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees on the page, as Playwright renders it
      expect(await page.locator("body").innerText()).toContain("admin:ro");
      // A forged form asking for admin.
      await page.evaluate(
        `(() => { const box = document.querySelector("input[name=scope]"); box.value = "admin"; box.checked = true; })()`,
      );
      await page.click("button[value=approve]");
      await page.getByText("cannot grant admin").waitFor();
      // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees on the page, as Playwright renders it
      expect(await page.locator("body").innerText()).toContain("cannot grant admin");
      // The consent POST, without the handle the page carried (as a cross-site form would send it).
      const forged = await context.request.post(`${origin}/oauth/authorize`, {
        form: { decision: "approve", scope: "admin:ro" },
      });
      expect(forged.status()).toBeGreaterThanOrEqual(400);
      // The sign-in form without its CSRF token.
      const noCsrf = await fetch(`${origin}/oauth/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: stack.adminToken, return_to: "/oauth/authorize?x=1" }),
        redirect: "manual",
      });
      expect(noCsrf.status).toBe(403);
      expect(noCsrf.headers.get("set-cookie")).toBeNull();
      const grants = (
        await admin.ok<{ grants: { client_id: string }[] }>("token", {
          action: "list",
          include_revoked: true,
        })
      ).grants;
      expect(grants.some((g) => g.client_id === clientId)).toBe(false);
    } finally {
      await context.close();
    }
  }, 60_000);

  it("CIMD documents that name another client_id, are oversized, or are too slow", async () => {
    const { challenge } = pkce();
    const context = await browser.newContext();
    try {
      for (const path of ["/mismatch.json", "/oversized.json", "/slow.json"]) {
        const visit = await authorizeInBrowser(
          context,
          authorizeUrl({ client_id: `${documentsOrigin}${path}`, code_challenge: challenge }),
          { token: stack.adminToken },
          callback.url,
        );
        expect(visit.consentText, path).toBe("");
        expect(visit.finalUrl, path).toContain("/oauth/authorize");
        expect(visit.finalText, path).toMatch(/could not be verified|cannot go on|not valid/i);
      }
    } finally {
      await context.close();
    }
  }, 90_000);
});
