import { Hono } from "hono";
import { SESSION_ID_PATTERN } from "../../../protocol/ids.js";
import { forward } from "../auth/principal-header.js";
import { objects } from "../objects/keys.js";
import { type AppBindings, requireCaller, requireHost } from "./auth-middleware.js";
import { checkOrigin } from "./origin.js";

const SESSION_ID = SESSION_ID_PATTERN;

function notFound(): Response {
  return Response.json({ error: { code: "not_found", message: "session not found" } }, { status: 404 });
}

/** Plain event streams for callers that are not MCP clients. */
export const sessionRoutes = new Hono<AppBindings>();
sessionRoutes.use("*", checkOrigin, requireCaller);

sessionRoutes.get("/:id/events", (c) => {
  const id = c.req.param("id");
  if (!SESSION_ID.test(id)) return notFound();
  return objects.session(c.env, id).fetch(forward(c.req.raw, c.var.caller, "/events"));
});

sessionRoutes.get("/:id/ws", (c) => {
  const id = c.req.param("id");
  if (!SESSION_ID.test(id)) return notFound();
  return objects.session(c.env, id).fetch(forward(c.req.raw, c.var.caller, "/ws"));
});

/** The tunnel: WebSockets host-agents open out to the Worker. */
export const tunnelRoutes = new Hono<AppBindings>();
tunnelRoutes.use("*", requireHost);

tunnelRoutes.get("/host", (c) => {
  return objects.hostRegistry(c.env).fetch(forward(c.req.raw, c.var.host, "/host"));
});

tunnelRoutes.get("/sessions/:id", (c) => {
  const id = c.req.param("id");
  if (!SESSION_ID.test(id)) return notFound();
  return objects.session(c.env, id).fetch(forward(c.req.raw, c.var.host, "/tunnel"));
});
