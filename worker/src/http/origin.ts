import { createMiddleware } from "hono/factory";
import { config } from "../env.js";
import type { AppBindings } from "./auth-middleware.js";

/**
 * Rejects browser requests from origins that are not allowed (DNS-rebinding protection the MCP
 * transport spec requires). Requests without an Origin header (non-browser clients) pass.
 */
export const checkOrigin = createMiddleware<AppBindings>(async (c, next) => {
  const origin = c.req.header("origin");
  if (origin !== undefined) {
    const sameOrigin = origin === new URL(c.req.url).origin;
    if (!sameOrigin && !config(c.env).allowedOrigins.includes(origin)) {
      return c.json({ error: { code: "forbidden", message: `origin ${origin} is not allowed` } }, 403);
    }
  }
  await next();
});
