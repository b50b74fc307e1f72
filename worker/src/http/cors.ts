import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { PARAM_HEADER_NAMES } from "../mcp/modern/param-headers.js";
import type { AppBindings } from "./auth-middleware.js";
import { isAllowedOrigin } from "./host-policy.js";
import { originPolicy } from "./origin.js";

/**
 * Request headers a browser MCP client sends: Streamable HTTP, resumption and Bearer auth, and
 * the 2026-07-28 routing headers (`Mcp-Method`, `Mcp-Name`, the `Mcp-Param-*` this server defines).
 */
const ALLOW_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  "mcp-method",
  "mcp-name",
  ...PARAM_HEADER_NAMES,
];

/**
 * CORS for browser MCP clients on allowed origins. It answers preflights itself, before auth,
 * since a browser never sends credentials on a preflight. Mount it after `checkOrigin`, which has
 * already refused other origins with 403; requests without Origin are not CORS and get no headers.
 */
export const mcpCors = createMiddleware<AppBindings>(async (c, next) => {
  if (c.req.header("origin") === undefined) return next();
  return corsForAllowedOrigins(c, next);
});

const corsForAllowedOrigins = cors({
  // Echo the origin (never "*"): the requests carry an Authorization header.
  origin: (origin, c) => (isAllowedOrigin(origin, originPolicy(c.env)) ? origin : null),
  allowMethods: ["GET", "POST", "DELETE"],
  allowHeaders: ALLOW_HEADERS,
  // The session id must be readable by the client; WWW-Authenticate tells it how to authenticate.
  exposeHeaders: ["Mcp-Session-Id", "WWW-Authenticate"],
  maxAge: 600,
});
