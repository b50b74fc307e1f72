import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { authenticate, bearerToken, type CallerPrincipal, type HostPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { bearerChallenge } from "../oauth/challenge.js";
import { authenticateGrant, looksLikeOAuthToken } from "../oauth/grant-principal.js";

export type AppBindings = {
  Bindings: Env;
  Variables: { caller: CallerPrincipal; host: HostPrincipal };
};

function unauthorized(message: string, challenge: string): HTTPException {
  return new HTTPException(401, {
    res: Response.json(
      { error: { code: "unauthorized", message } },
      { status: 401, headers: { "www-authenticate": challenge } },
    ),
  });
}

/**
 * Requires a caller: an API token (`Authorization: Bearer oub_…`) or an OAuth access token
 * issued by this Worker for /mcp. Without one, the 401 tells an MCP client where to sign in
 * (RFC 9728 `resource_metadata`, and the scope to ask for).
 */
export const requireCaller = createMiddleware<AppBindings>(async (c, next) => {
  const token = bearerToken(c.req.header("authorization"));
  const origin = new URL(c.req.url).origin;
  const principal =
    token !== null && looksLikeOAuthToken(token)
      ? await authenticateGrant(c.env, origin, token)
      : await authenticate(c.env, token);
  if (principal?.kind !== "caller") {
    throw unauthorized(
      token === null
        ? "sign in (OAuth) or present an API token (Authorization: Bearer oub_…)"
        : "the token is not valid here (unknown, expired or revoked); sign in again or use another token",
      bearerChallenge(origin, token === null ? null : "invalid_token"),
    );
  }
  c.set("caller", principal);
  await next();
});

/** Requires a host-agent token. */
export const requireHost = createMiddleware<AppBindings>(async (c, next) => {
  const principal = await authenticate(c.env, bearerToken(c.req.header("authorization")));
  if (principal?.kind !== "host")
    throw unauthorized("a valid host token is required", 'Bearer realm="oubliette"');
  c.set("host", principal);
  await next();
});
