import { Hono } from "hono";
import type { HostSelf } from "../../../protocol/host-self.js";
import { AppError } from "../errors.js";
import { type AppBindings, unauthorized } from "./auth-middleware.js";
import { bearerPrincipal } from "./bearer.js";

/**
 * `GET /v1/hosts/self`: the host a host token is for (protocol/host-self.ts), so `host-agent
 * doctor` can tell a refused token from one bound to another host id before the host starts.
 * No token, an unknown, revoked or expired one, or a droid's session key: 401; a caller's token
 * (API or OAuth): 403.
 * It only reads: the token is resolved as the tunnel resolves it, nothing is recorded.
 */
export const hostSelfRoute = new Hono<AppBindings>();

hostSelfRoute.get("/", async (c) => {
  const origin = new URL(c.req.url).origin;
  const bearer = await bearerPrincipal(c.env, origin, c.req.header("authorization"));
  if (bearer.kind !== "principal") {
    throw unauthorized(
      bearer.kind === "none"
        ? "a host token is required (Authorization: Bearer …)"
        : bearer.kind === "session_bound"
          ? bearer.message
          : "this token is not valid here (unknown, revoked or expired)",
      'Bearer realm="oubliette"',
    );
  }
  const { principal } = bearer;
  if (principal.kind !== "host")
    throw new AppError(
      "forbidden",
      "this is a caller's token, not a host token: hosts use a token from `host enrol`",
    );
  return c.json({ host_id: principal.hostId } satisfies HostSelf);
});
