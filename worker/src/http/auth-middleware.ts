import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { authenticate, bearerToken, type CallerPrincipal, type HostPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";

export type AppBindings = {
  Bindings: Env;
  Variables: { caller: CallerPrincipal; host: HostPrincipal };
};

function unauthorized(message: string): HTTPException {
  return new HTTPException(401, {
    res: Response.json(
      { error: { code: "unauthorized", message } },
      { status: 401, headers: { "www-authenticate": 'Bearer realm="oubliette"' } },
    ),
  });
}

/** Requires a caller token (Authorization: Bearer oub_...). */
export const requireCaller = createMiddleware<AppBindings>(async (c, next) => {
  const principal = await authenticate(c.env, bearerToken(c.req.header("authorization")));
  if (principal?.kind !== "caller")
    throw unauthorized("a valid caller token is required (Authorization: Bearer ...)");
  c.set("caller", principal);
  await next();
});

/** Requires a host-agent token. */
export const requireHost = createMiddleware<AppBindings>(async (c, next) => {
  const principal = await authenticate(c.env, bearerToken(c.req.header("authorization")));
  if (principal?.kind !== "host") throw unauthorized("a valid host token is required");
  c.set("host", principal);
  await next();
});
