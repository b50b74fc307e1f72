import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError } from "./errors.js";
import type { AppBindings } from "./http/auth-middleware.js";
import { mcpRoute } from "./http/mcp-route.js";
import { sessionRoutes, tunnelRoutes } from "./http/session-routes.js";
import { createLog, errorMessage } from "./log.js";

const log = createLog({ component: "worker" });

/** The Worker's HTTP surface. */
export const app = new Hono<AppBindings>();

app.get("/healthz", (c) => c.json({ ok: true }));
app.route("/mcp", mcpRoute);
app.route("/v1/sessions", sessionRoutes);
app.route("/v1/tunnel", tunnelRoutes);

app.notFound((c) =>
  c.json({ error: { code: "not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404),
);

app.onError((err, c) => {
  if (err instanceof HTTPException) return err.getResponse();
  if (err instanceof AppError)
    return c.json({ error: { code: err.code, message: err.message } }, err.status as 400);
  log.error("unhandled error", { path: c.req.path, error: errorMessage(err) });
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
});
