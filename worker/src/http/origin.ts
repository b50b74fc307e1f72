import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { clip } from "../../../protocol/rpc/errors.js";
import { config, type Env } from "../env.js";
import type { AppBindings } from "./auth-middleware.js";
import { isAllowedHost, isAllowedOrigin, type OriginPolicy } from "./host-policy.js";

/** The configured origins, as the policy functions take them. */
export function originPolicy(env: Env): OriginPolicy {
  const { publicOrigins, allowedOrigins } = config(env);
  return { publicOrigins, allowedOrigins };
}

function forbidden(message: string): HTTPException {
  return new HTTPException(403, {
    res: Response.json({ error: { code: "forbidden", message } }, { status: 403 }),
  });
}

/**
 * Refuses a Host that is neither loopback nor a configured public origin's host. This is the
 * DNS-rebinding guard: a rebound name reaches the Worker with its own name in Host.
 */
export const checkHost = createMiddleware<AppBindings>(async (c, next) => {
  // In production the URL's host is the Host header; a missing header (never sent by HTTP/1.1
  // clients, but possible from a Worker's own fetch) falls back to it.
  const host = c.req.header("host") ?? new URL(c.req.url).host;
  if (!isAllowedHost(host, originPolicy(c.env))) {
    throw forbidden(
      `host ${clip(host)} is not served here; add the Worker's public origin (e.g. https://${clip(host)}) to OUBLIETTE_PUBLIC_ORIGINS`,
    );
  }
  await next();
});

/**
 * Rejects browser requests from origins that are not allowed (the MCP transport spec asks for
 * this). Requests without an Origin header (non-browser clients) pass.
 */
export const checkOrigin = createMiddleware<AppBindings>(async (c, next) => {
  const origin = c.req.header("origin");
  if (origin !== undefined && !isAllowedOrigin(origin, originPolicy(c.env))) {
    throw forbidden(
      `origin ${clip(origin)} is not allowed; add it to OUBLIETTE_ALLOWED_ORIGINS to let browsers there call`,
    );
  }
  await next();
});
