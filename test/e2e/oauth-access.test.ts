/**
 * Signing in behind Cloudflare Access: with the team domain and audience configured, the Access
 * JWT a request carries (here sent by Chromium as Access would add it) signs the person in to the
 * authorization page with the configured Access scopes; a JWT that is forged, for another
 * audience, or expired signs no one in. The team's JWKS is served over https on loopback (the
 * Worker trusts a throwaway CA).
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { TestCaller } from "../support/caller.js";
import { authorizeInBrowser, type Callback, pkce, startCallback } from "../support/oauth-client.js";
import { TestStack } from "../support/stack.js";
import { type LoopbackTls, loopbackTls } from "../support/tls-cert.js";

/** A private key as jose makes and takes it. */
type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

const AUDIENCE = "0123456789abcdef-access-app";

let stack: TestStack;
let admin: TestCaller;
let browser: Browser;
let tls: LoopbackTls;
let team: Server;
let teamOrigin = "";
let callback: Callback;
let origin = "";
let signingKey: SigningKey;
let otherKey: SigningKey;
let publicJwk: JWK;

beforeAll(async () => {
  tls = await loopbackTls();
  callback = await startCallback();
  const pair = await generateKeyPair("RS256");
  signingKey = pair.privateKey;
  otherKey = (await generateKeyPair("RS256")).privateKey;
  publicJwk = { ...(await exportJWK(pair.publicKey)), kid: "test-key", alg: "RS256", use: "sig" };
  team = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    if (req.url === "/cdn-cgi/access/certs") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [publicJwk] }));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => team.listen(0, "127.0.0.1", resolve));
  teamOrigin = `https://127.0.0.1:${(team.address() as AddressInfo).port}`;
  stack = await TestStack.start({
    vars: {
      OUBLIETTE_ACCESS_TEAM_DOMAIN: teamOrigin,
      OUBLIETTE_ACCESS_AUD: AUDIENCE,
      OUBLIETTE_ACCESS_SCOPES: "admin:ro",
    },
    wranglerEnv: { NODE_EXTRA_CA_CERTS: tls.caFile },
  });
  origin = new URL(stack.mcpUrl).origin;
  admin = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await admin?.close();
  await stack?.stop();
  team?.closeAllConnections();
  await new Promise<void>((resolve) => (team ? team.close(() => resolve()) : resolve()));
  await callback?.close();
  await tls?.remove();
});

async function accessJwt(
  options: { key?: SigningKey; audience?: string; expired?: boolean } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: "alice@example.com" })
    .setProtectedHeader({ alg: "RS256", kid: "test-key" })
    .setIssuer(teamOrigin)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(now - 60)
    .setExpirationTime(options.expired ? now - 30 : now + 300)
    .sign(options.key ?? signingKey);
}

async function register(): Promise<string> {
  const res = await fetch(`${origin}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "access client",
      redirect_uris: [callback.url],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    }),
  });
  return String(((await res.json()) as { client_id: string }).client_id);
}

/** Goes to the authorization page with `jwt` as Access would send it; where the browser ended. */
async function visit(jwt: string) {
  const clientId = await register();
  const { verifier, challenge } = pkce();
  const context = await browser.newContext({ extraHTTPHeaders: { "cf-access-jwt-assertion": jwt } });
  try {
    const url = `${origin}/oauth/authorize?${new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: callback.url,
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
      resource: `${origin}/mcp`,
      scope: "admin:ro",
    })}`;
    // No API token: a sign-in form would be filled with nothing and refused.
    const seen = await authorizeInBrowser(context, url, { token: "" }, callback.url);
    return { ...seen, clientId, verifier };
  } finally {
    await context.close();
  }
}

describe("behind Cloudflare Access", () => {
  it("signs the person in with Access's JWT, with the Access scopes, and the grant works", async () => {
    const seen = await visit(await accessJwt());
    expect(seen.consentText).toContain("signed in as access-alice@example.com");
    expect(seen.consentText).toContain("admin:ro");
    expect(seen.consentText).not.toMatch(/\badmin: everything/);
    const code = new URL(seen.finalUrl).searchParams.get("code") ?? "";
    expect(code).not.toBe("");
    const res = await fetch(`${origin}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: callback.url,
        client_id: seen.clientId,
        code_verifier: seen.verifier,
      }),
    });
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; scope: string };
    expect(tokens.scope).toBe("admin:ro");
    const caller = await TestCaller.connect(stack.mcpUrl, tokens.access_token);
    try {
      expect(await caller.ok("project", { action: "list" })).toHaveProperty("projects");
    } finally {
      await caller.close();
    }
    const grants = (
      await admin.ok<{ grants: { signed_in_as: string; client_id: string }[] }>("token", { action: "list" })
    ).grants;
    expect(grants.find((g) => g.client_id === seen.clientId)?.signed_in_as).toBe("access-alice@example.com");
  }, 120_000);

  it.each([
    ["signed by another key", { key: "other" }],
    ["for another application", { audience: "someone-else" }],
    ["expired", { expired: true }],
  ] as const)(
    "signs no one in with a JWT %s",
    async (_, how) => {
      const jwt = await accessJwt({
        ...("key" in how ? { key: otherKey } : {}),
        ...("audience" in how ? { audience: how.audience } : {}),
        ...("expired" in how ? { expired: true } : {}),
      });
      const seen = await visit(jwt);
      expect(seen.consentText).toBe("");
      expect(seen.finalText).toMatch(/not a valid API token|Sign in/);
      expect(new URL(seen.finalUrl).searchParams.get("code")).toBeNull();
    },
    60_000,
  );
});
