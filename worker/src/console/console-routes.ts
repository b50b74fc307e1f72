import { type Context, Hono } from "hono";
import { z } from "zod";
import { SESSION_ID_PATTERN } from "../../../protocol/ids.js";
import { forward } from "../auth/principal-header.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { AppBindings } from "../http/auth-middleware.js";
import { readCappedBody } from "../http/read-body.js";
import { createLog } from "../log.js";
import { signInPage } from "../oauth/pages.js";
import { csrfToken, endSignin, signedIn, signedInOrWhy } from "../oauth/signin-session.js";
import { objects } from "../objects/keys.js";
import { callerTools } from "../tools/catalog.js";
import { callTool, UnknownToolError } from "../tools/dispatch.js";
import { toJsonSchema } from "../tools/json-schema.js";
import { CSRF_HEADER, consoleCsrf, consoleCsrfMatches } from "./console-csrf.js";
import { CONSOLE_PATH } from "./console-path.js";
import { consoleShell } from "./shell.js";
import { whileSignedIn } from "./signed-in-stream.js";

const log = createLog({ component: "console" });

/** Largest API call body (a tool's arguments; the tools bound their own fields further). */
const MAX_CALL_BYTES = 1024 * 1024;
/** How often a live stream checks that its sign-in still holds. */
const RECHECK_MS = 1_000;

function apiError(status: 400 | 401 | 403 | 404 | 413, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status, headers: { "cache-control": "no-store" } });
}

/**
 * The operator console: one page at `/` (the sign-in page until the browser is signed in, with the
 * same sign-in as OAuth: an API token once, or Cloudflare Access), its static client, and a small
 * JSON API under `/console/api` for it. The API is MCP's own tool catalogue: `call` runs a tool
 * through the same dispatcher, access check and audit as `tools/call` (no second implementation of
 * any rule), as the signed-in person. Every mutation carries the CSRF token.
 */
export const consoleRoutes = new Hono<AppBindings>();

consoleRoutes.get(CONSOLE_PATH, async (c) => {
  const person = await signedIn(c);
  if (person === null) {
    const csrf = csrfToken();
    return signInPage({
      returnTo: CONSOLE_PATH,
      csrf: csrf.value,
      csrfCookie: csrf.cookie(c),
      for: "console",
    });
  }
  const csrf = consoleCsrf(c);
  const headers = new Headers();
  if (csrf.setCookie !== null) headers.append("set-cookie", csrf.setCookie);
  return consoleShell(person, csrf.value, headers);
});

consoleRoutes.post("/console/signout", async (c) => {
  const form = await c.req.formData().catch(() => null);
  if (!consoleCsrfMatches(c, form?.get("csrf")?.toString()))
    return apiError(403, "csrf", "the form was not sent from the console; reload it and sign out again");
  const headers = new Headers({ location: CONSOLE_PATH, "cache-control": "no-store" });
  headers.append("set-cookie", await endSignin(c));
  return new Response(null, { status: 303, headers });
});

// Every API route: a signed-in person, else 401 (the client then shows that the sign-in ended).
consoleRoutes.use("/console/api/*", async (c, next) => {
  const signin = await signedInOrWhy(c);
  if (!signin.ok)
    return apiError(401, "unauthorized", signin.reason ?? "not signed in (or the sign-in ended)");
  c.set("caller", signin.person);
  await next();
  c.header("cache-control", "no-store");
});

consoleRoutes.get("/console/api/me", (c) =>
  c.json({ token_id: c.var.caller.tokenId, scopes: c.var.caller.scopes }),
);

const CallSchema = z.object({
  name: z.string().min(1).max(128),
  arguments: z.record(z.string(), z.unknown()).optional(),
});

consoleRoutes.post("/console/api/call", async (c) => {
  if (!consoleCsrfMatches(c, c.req.header(CSRF_HEADER)))
    return apiError(
      403,
      "csrf",
      "the request did not come from the console page (CSRF token missing or wrong)",
    );
  if (!(c.req.header("content-type") ?? "").startsWith("application/json"))
    return apiError(400, "invalid_request", "send the call as application/json");
  const body = await readCappedBody(c.req.raw, MAX_CALL_BYTES);
  if (!body.ok)
    return apiError(413, "too_large", `the call is ${body.bytes} bytes; at most ${MAX_CALL_BYTES}`);
  let json: unknown;
  try {
    json = JSON.parse(body.text);
  } catch {
    return apiError(400, "invalid_request", "the body is not JSON");
  }
  const call = CallSchema.safeParse(json);
  if (!call.success) return apiError(400, "invalid_request", 'send {"name": "<tool>", "arguments": {…}}');
  try {
    const result = await callTool(callerTools, call.data.name, call.data.arguments, {
      env: c.env,
      principal: c.var.caller,
      mcp: null,
      log,
      waitUntil: (p) => c.executionCtx.waitUntil(p),
      runsJobs: true,
      signal: c.req.raw.signal,
    });
    return c.json(result);
  } catch (err) {
    if (err instanceof UnknownToolError) return apiError(404, "unknown_tool", `no tool ${call.data.name}`);
    throw err;
  }
});

// The arguments of one tool action, as JSON Schema from its definition: the console builds its
// forms from this, so a field added to a tool shows up in the form by itself.
consoleRoutes.get("/console/api/schema/:tool/:action", (c) => {
  const tool = callerTools.get(c.req.param("tool"));
  const action = tool?.definition.actions[c.req.param("action")];
  if (!tool || !action) return apiError(404, "not_found", "no such tool action");
  return c.json(toJsonSchema(action.input));
});

consoleRoutes.get("/console/api/sessions/:id/events", async (c) => {
  const id = c.req.param("id");
  if (!SESSION_ID_PATTERN.test(id)) return apiError(404, "not_found", "session not found");
  const response = await objects.session(c.env, id).fetch(forward(c.req.raw, c.var.caller, "/events"));
  return whileSignedIn(response, () => stillSignedIn(c, c.var.caller), RECHECK_MS);
});

/** Whether the browser is still signed in as the same token. */
async function stillSignedIn(c: Context<AppBindings>, person: CallerPrincipal): Promise<boolean> {
  const now = await signedIn(c);
  return now !== null && now.tokenId === person.tokenId;
}
