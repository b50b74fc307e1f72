import { type Context, Hono } from "hono";
import { audit } from "../audit/audit.js";
import { sha256Hex } from "../auth/digest.js";
import type { AppBindings } from "../http/auth-middleware.js";
import { createLog } from "../log.js";
import { objects } from "../objects/keys.js";
import { oauthRoles } from "./authorization-server.js";
import { OAuthPaths } from "./endpoints.js";
import { revokeOAuthGrant, userGrants } from "./revoke.js";

const log = createLog({ component: "oauth" });

/** Largest token or registration request read. */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * The authorization server's protocol endpoints, served by the OAuth library: metadata (RFC 8414,
 * RFC 9728), token and refresh, RFC 7009 revocation, and Dynamic Client Registration. Around the
 * library: a refresh token presented a second time revokes its whole grant (the library keeps the
 * previous one usable until its successor is used, for lost responses; a product holding agents'
 * keys treats any replay as theft), registrations are rate limited per address, and grant
 * refreshes and revocations reach the audit log and the token directory.
 */
export const serverRoutes = new Hono<AppBindings>();

/**
 * The request's execution context as the Workers runtime hands it over. Hono types it with the
 * few members it uses itself; the OAuth provider takes the runtime's own type (the same object).
 */
function workerCtx(c: Context<AppBindings>): ExecutionContext {
  return c.executionCtx as ExecutionContext;
}

function roles(c: Context<AppBindings>) {
  return oauthRoles(new URL(c.req.url).origin);
}

function oauthError(status: number, error: string, description: string, headers: HeadersInit = {}): Response {
  return Response.json(
    { error, error_description: description },
    { status, headers: { "cache-control": "no-store", ...headers } },
  );
}

serverRoutes.get(OAuthPaths.serverMetadata, (c) => roles(c).server.fetch(c.req.raw, c.env, workerCtx(c)));

serverRoutes.get(`${OAuthPaths.resourceMetadata}${OAuthPaths.resource}`, (c) =>
  roles(c).resource.fetch(c.req.raw, c.env, workerCtx(c)),
);

// The root document too (RFC 9728 §3 for clients that do not insert the path): /mcp's.
serverRoutes.get(OAuthPaths.resourceMetadata, (c) => {
  const url = new URL(c.req.url);
  url.pathname = `${OAuthPaths.resourceMetadata}${OAuthPaths.resource}`;
  return roles(c).resource.fetch(new Request(url, c.req.raw), c.env, workerCtx(c));
});

serverRoutes.on(["OPTIONS"], [OAuthPaths.token, OAuthPaths.register], (c) =>
  roles(c).server.fetch(c.req.raw, c.env, workerCtx(c)),
);

serverRoutes.post(OAuthPaths.register, async (c) => {
  const limiter = c.env.OAUTH_REGISTER_LIMIT;
  if (limiter !== undefined) {
    const key = c.req.header("cf-connecting-ip") ?? "local";
    const { success } = await limiter.limit({ key });
    if (!success) {
      log.warn("client registration rate limited", { key });
      return oauthError(
        429,
        "too_many_requests",
        "too many client registrations from this address; try again in a minute",
        {
          "retry-after": "60",
        },
      );
    }
  }
  if (Number(c.req.header("content-length") ?? "0") > MAX_BODY_BYTES) {
    return oauthError(413, "invalid_client_metadata", `a registration is at most ${MAX_BODY_BYTES} bytes`);
  }
  return roles(c).server.fetch(c.req.raw, c.env, workerCtx(c));
});

serverRoutes.post(OAuthPaths.token, async (c) => {
  if (Number(c.req.header("content-length") ?? "0") > MAX_BODY_BYTES) {
    return oauthError(413, "invalid_request", `a token request is at most ${MAX_BODY_BYTES} bytes`);
  }
  const params = new URLSearchParams(await c.req.raw.clone().text());
  const server = roles(c).server;
  const grantType = params.get("grant_type");
  const wait = (p: Promise<unknown>) => c.executionCtx.waitUntil(p);
  if (grantType === "refresh_token") {
    const token = params.get("refresh_token") ?? "";
    const [userId, oauthGrantId, secret] = token.split(":");
    if (userId && oauthGrantId && secret) {
      const use = await objects.tokens(c.env).useRefreshToken(await sha256Hex(token), oauthGrantId);
      if (!use.fresh) {
        await revokeOAuthGrant(c.env, server.getOAuthApi(c.env), { oauthGrantId, userId });
        for (const grant of use.grants) {
          audit(
            c.env,
            {
              token_id: userId,
              action: "oauth.grant_revoked",
              target: `${grant.grantId} client=${grant.clientId}`,
              outcome: "refresh_token_replayed",
            },
            wait,
            log,
          );
        }
        return oauthError(
          400,
          "invalid_grant",
          "this refresh token was used before: its grant is revoked; sign in again",
        );
      }
      const answer = await server.fetch(c.req.raw, c.env, workerCtx(c));
      for (const grant of use.grants) {
        audit(
          c.env,
          {
            token_id: userId,
            action: "oauth.grant_refreshed",
            target: `${grant.grantId} client=${grant.clientId}`,
            outcome: answer.ok ? "ok" : `http_${answer.status}`,
          },
          wait,
          log,
        );
      }
      return answer;
    }
  }
  const answer = await server.fetch(c.req.raw, c.env, workerCtx(c));
  // RFC 7009: a client revoked one of its tokens. A refresh token takes its grant with it.
  const revoked = grantType === null ? params.get("token") : null;
  if (revoked !== null && answer.ok) wait(forgetRevoked(c, revoked));
  return answer;
});

/** After an RFC 7009 revocation: a grant the library no longer holds is revoked in the directory too. */
async function forgetRevoked(c: Context<AppBindings>, token: string): Promise<void> {
  const [userId, oauthGrantId] = token.split(":");
  if (!userId || !oauthGrantId) return;
  const oauth = roles(c).server.getOAuthApi(c.env);
  for await (const grant of userGrants(oauth, userId)) if (grant.id === oauthGrantId) return;
  const rows = await objects.tokens(c.env).revokeOauthGrant(oauthGrantId);
  for (const row of rows) {
    audit(
      c.env,
      {
        token_id: userId,
        action: "oauth.grant_revoked",
        target: `${row.id} client=${row.clientId}`,
        outcome: "revoked_by_client",
      },
      (p) => c.executionCtx.waitUntil(p),
      log,
    );
  }
}
