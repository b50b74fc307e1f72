import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { z } from "zod";
import { consoleRoutes } from "./console/console-routes.js";
import { AppError } from "./errors.js";
import type { AppBindings } from "./http/auth-middleware.js";
import { hostSelfRoute } from "./http/host-self-route.js";
import { mcpRoute } from "./http/mcp-route.js";
import { checkHost } from "./http/origin.js";
import { discardUnreadBody } from "./http/read-body.js";
import { sessionRoutes, tunnelRoutes } from "./http/session-routes.js";
import { createLog, errorMessage } from "./log.js";
import { authorizeRoutes } from "./oauth/authorize-routes.js";
import { serverRoutes } from "./oauth/server-routes.js";

const log = createLog({ component: "worker" });

/** The Worker's HTTP surface. */
export const app = new Hono<AppBindings>();

// Every request's body is read to its end before its response goes, so its connection stays usable.
app.use("*", async (c, next) => {
  await next();
  await discardUnreadBody(c.req.raw);
});
// The nonce lets `npm start` tell the Worker it just started from any other server on the port.
const HealthEnvSchema = z.object({ OUBLIETTE_INSTANCE_ID: z.string().min(1).optional() });
app.get("/healthz", (c) => {
  const instance = HealthEnvSchema.safeParse(c.env).data?.OUBLIETTE_INSTANCE_ID;
  return c.json(instance === undefined ? { ok: true } : { ok: true, instance });
});
// DNS-rebinding guard on every caller and host route, before anything else looks at the request.
app.use("/mcp/*", checkHost);
app.use("/v1/*", checkHost);
app.use("/oauth/*", checkHost);
app.use("/.well-known/*", checkHost);
app.use("/", checkHost);
app.use("/console/*", checkHost);
app.route("/mcp", mcpRoute);
// Sign-in (OAuth 2.1): the authorization server's endpoints and the sign-in and consent pages.
app.route("/", serverRoutes);
app.route("/", authorizeRoutes);
app.route("/v1/sessions", sessionRoutes);
app.route("/v1/tunnel", tunnelRoutes);
app.route("/v1/hosts/self", hostSelfRoute);
// The operator console: its page at `/`, its API under /console/api (its script and style are static assets).
app.route("/", consoleRoutes);

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
