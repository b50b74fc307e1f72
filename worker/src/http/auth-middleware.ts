import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import type { CallerPrincipal, HostPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { bearerChallenge } from "../oauth/challenge.js";
import { bearerPrincipal } from "./bearer.js";

export type AppBindings = {
  Bindings: Env;
  Variables: { caller: CallerPrincipal; host: HostPrincipal };
};

/** A 401 with the JSON error body every route answers and the route's `WWW-Authenticate`. */
export function unauthorized(message: string, challenge: string): HTTPException {
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
  const origin = new URL(c.req.url).origin;
  const bearer = await bearerPrincipal(c.env, origin, c.req.header("authorization"));
  if (bearer.kind === "principal" && bearer.principal.kind === "caller") {
    c.set("caller", bearer.principal);
    await next();
    return;
  }
  throw unauthorized(
    bearer.kind === "none"
      ? "sign in (OAuth) or present an API token (Authorization: Bearer oub_…)"
      : bearer.kind === "session_bound"
        ? bearer.message
        : "the token is not valid here (unknown, expired or revoked); sign in again or use another token",
    bearerChallenge(origin, bearer.kind === "none" ? null : "invalid_token"),
  );
});

/** Requires a host-agent token. */
export const requireHost = createMiddleware<AppBindings>(async (c, next) => {
  const origin = new URL(c.req.url).origin;
  const bearer = await bearerPrincipal(c.env, origin, c.req.header("authorization"));
  if (bearer.kind === "principal" && bearer.principal.kind === "host") {
    c.set("host", bearer.principal);
    await next();
    return;
  }
  throw unauthorized(
    bearer.kind === "session_bound" ? bearer.message : "a valid host token is required",
    'Bearer realm="oubliette"',
  );
});
