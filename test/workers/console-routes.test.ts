/**
 * The console's HTTP surface in workerd: the shared sign-in (an API token once, then an HttpOnly
 * cookie), the page's security headers, and its JSON API — MCP's own tool dispatcher behind a
 * CSRF check, refused without a sign-in, and closed to a revoked token.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE } from "./support/frame-socket.js";
import { callTool, initialize } from "./support/mcp.js";
import { ADMIN_TOKEN, READER_TOKEN } from "./support/tokens.js";

const ORIGIN = new URL(BASE).origin;

/** A tool call over MCP as the admin (the console's results are checked against it). */
async function adminCall(name: string, args: Record<string, unknown>) {
  return callTool(await initialize(ADMIN_TOKEN), name, args);
}

interface Browser {
  cookies: Map<string, string>;
}

function cookieHeader(browser: Browser): string {
  return [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
}

function keep(browser: Browser, response: Response): void {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const [name, value] = (pair ?? "").split("=");
    if (name === undefined) continue;
    if (value === "" || /max-age=0/i.test(line)) browser.cookies.delete(name);
    else browser.cookies.set(name, value ?? "");
  }
}

async function fetchAs(browser: Browser, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookieHeader(browser));
  const response = await exports.default.fetch(`${BASE}${path}`, { ...init, headers, redirect: "manual" });
  keep(browser, response);
  return response;
}

/** Signs a fresh browser in to the console with `token`, as a person would on the sign-in page. */
async function signIn(token: string): Promise<{ browser: Browser; csrf: string; page: string }> {
  const browser: Browser = { cookies: new Map() };
  const signInPage = await fetchAs(browser, "/");
  expect(signInPage.status).toBe(200);
  const html = await signInPage.text();
  expect(html).toContain("Sign in to the console");
  const formCsrf = /name="csrf" value="([0-9a-f]+)"/.exec(html)?.[1] ?? "";
  const form = new URLSearchParams({ csrf: formCsrf, return_to: "/", token });
  const signedIn = await fetchAs(browser, "/oauth/sign-in", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
    body: form.toString(),
  });
  expect(signedIn.status).toBe(303);
  expect(signedIn.headers.get("location")).toBe("/");
  const shell = await fetchAs(browser, "/");
  const page = await shell.text();
  const csrf = /name="oubliette-csrf" content="([0-9a-f]+)"/.exec(page)?.[1] ?? "";
  expect(csrf).toMatch(/^[0-9a-f]{32}$/);
  return { browser, csrf, page };
}

function call(
  signedIn: { browser: Browser; csrf: string },
  name: string,
  args: object,
  headers: Record<string, string> = {},
) {
  return fetchAs(signedIn.browser, "/console/api/call", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-oubliette-csrf": signedIn.csrf,
      origin: ORIGIN,
      ...headers,
    },
    body: JSON.stringify({ name, arguments: args }),
  });
}

describe("the console", () => {
  it("shows the sign-in page until signed in, then the page with strict headers and who is signed in", async () => {
    const session = await signIn(ADMIN_TOKEN);
    const shell = await fetchAs(session.browser, "/");
    const csp = shell.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe");
    expect(shell.headers.get("x-frame-options")).toBe("DENY");
    expect(session.page).toContain('<script type="module" src="/console/app.js"></script>');
    expect(session.page).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(session.page).toContain("&quot;scopes&quot;:[&quot;admin&quot;]");
    expect(session.page).not.toContain(ADMIN_TOKEN);
    const signinCookie = [...session.browser.cookies.keys()].find((k) => k.endsWith("signin"));
    expect(signinCookie).toBeDefined();
  });

  it("runs a tool through MCP's dispatcher as the signed-in person", async () => {
    const session = await signIn(ADMIN_TOKEN);
    const response = await call(session, "project", { action: "list" });
    expect(response.status).toBe(200);
    const result = (await response.json()) as {
      isError?: boolean;
      structuredContent?: { projects?: unknown[] };
    };
    expect(result.isError).toBeUndefined();
    expect(Array.isArray(result.structuredContent?.projects)).toBe(true);
    const me = await fetchAs(session.browser, "/console/api/me");
    expect(await me.json()).toEqual({ token_id: "admin", scopes: ["admin"] });
  });

  it("describes a tool action's arguments from its definition, for the page's forms", async () => {
    expect((await exports.default.fetch(`${BASE}/console/api/schema/token/create`)).status).toBe(401);
    const session = await signIn(ADMIN_TOKEN);
    const schema = (await (await fetchAs(session.browser, "/console/api/schema/token/create")).json()) as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(Object.keys(schema.properties).sort()).toEqual(["expires_in_hours", "name", "scope"]);
    expect(schema.required).toEqual(expect.arrayContaining(["name", "scope"]));
    expect((await fetchAs(session.browser, "/console/api/schema/token/nothing")).status).toBe(404);
    expect((await fetchAs(session.browser, "/console/api/schema/nothing/create")).status).toBe(404);
  });

  it("applies the same access check as MCP: a read-only person's mutation is forbidden", async () => {
    const session = await signIn(READER_TOKEN);
    const refused = await call(session, "project", { action: "create", name: "not-by-a-reader" });
    const result = (await refused.json()) as {
      isError?: boolean;
      structuredContent?: { error?: { code?: string } };
    };
    expect(result.isError).toBe(true);
    expect(result.structuredContent?.error?.code).toBe("forbidden");
    // admin:ro reads the administration too (the README's rule).
    for (const [name, args] of [
      ["token", { action: "list" }],
      ["host", { action: "list" }],
      ["audit", {}],
    ] as const) {
      const read = (await (await call(session, name, args)).json()) as { isError?: boolean };
      expect(read.isError, name).toBeUndefined();
    }
  });

  it("refuses a mutation without the CSRF token, with another one, or from another origin", async () => {
    const session = await signIn(ADMIN_TOKEN);
    const args = { action: "create", name: "forged-project" };
    const missing = await fetchAs(session.browser, "/console/api/call", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ name: "project", arguments: args }),
    });
    expect(missing.status).toBe(403);
    expect((await call(session, "project", args, { "x-oubliette-csrf": "0".repeat(32) })).status).toBe(403);
    expect((await call(session, "project", args, { origin: "https://evil.example" })).status).toBe(403);
    expect((await call(session, "project", args, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    const list = await adminCall("project", { action: "list" });
    expect(JSON.stringify(list)).not.toContain("forged-project");
  });

  it("refuses bad bodies clearly", async () => {
    const session = await signIn(ADMIN_TOKEN);
    const post = (body: string, type = "application/json") =>
      fetchAs(session.browser, "/console/api/call", {
        method: "POST",
        headers: { "content-type": type, "x-oubliette-csrf": session.csrf, origin: ORIGIN },
        body,
      });
    expect((await post("{not json")).status).toBe(400);
    expect((await post(JSON.stringify({ arguments: {} }))).status).toBe(400);
    expect((await post("name=project", "application/x-www-form-urlencoded")).status).toBe(400);
    expect((await post(JSON.stringify({ name: "x".repeat(20), arguments: {} }))).status).toBe(404);
    expect(
      (await post(JSON.stringify({ name: "project", arguments: { pad: "y".repeat(1_100_000) } }))).status,
    ).toBe(413);
  });

  it("answers 401 without a sign-in, and after the token is revoked", async () => {
    const anonymous = await exports.default.fetch(`${BASE}/console/api/me`);
    expect(anonymous.status).toBe(401);
    const created = (await adminCall("token", {
      action: "create",
      name: "console-revoked",
      scope: "admin:ro",
    })) as unknown as { structuredContent: { token: string; token_id: string } };
    const session = await signIn(created.structuredContent.token);
    expect((await fetchAs(session.browser, "/console/api/me")).status).toBe(200);
    await adminCall("token", { action: "revoke", token_id: created.structuredContent.token_id });
    await new Promise((r) => setTimeout(r, 2_100));
    expect((await fetchAs(session.browser, "/console/api/me")).status).toBe(401);
    expect((await call(session, "project", { action: "list" })).status).toBe(401);
  });

  it("signs out: the cookie is cleared and the sign-in ends", async () => {
    const session = await signIn(ADMIN_TOKEN);
    const forged = await fetchAs(session.browser, "/console/signout", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: "csrf=wrong",
    });
    expect(forged.status).toBe(403);
    const signinValue = [...session.browser.cookies].find(([k]) => k.endsWith("signin"))?.[1] ?? "";
    const out = await fetchAs(session.browser, "/console/signout", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: `csrf=${session.csrf}`,
    });
    expect(out.status).toBe(303);
    expect((await fetchAs(session.browser, "/console/api/me")).status).toBe(401);
    // The old cookie value no longer signs anyone in either.
    const replay = await exports.default.fetch(`${BASE}/console/api/me`, {
      headers: { cookie: `oub-signin=${signinValue}` },
    });
    expect(replay.status).toBe(401);
  });
});
