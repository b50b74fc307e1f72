import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { HostSelf } from "../../../protocol/host-self.js";
import { authenticate, bearerToken } from "../auth/tokens.js";
import { AppError } from "../errors.js";
import { authenticateGrant, looksLikeOAuthToken } from "../oauth/grant-principal.js";
import type { AppBindings } from "./auth-middleware.js";

/**
 * `GET /v1/hosts/self`: the host a host token is for (protocol/host-self.ts), so `host-agent
 * doctor` can tell a refused token from one bound to another host id before the host starts.
 * No token or an unknown, revoked or expired one: 401; a caller's token (API or OAuth): 403.
 * It only reads: the token is resolved as the tunnel resolves it, nothing is recorded.
 */
export const hostSelfRoute = new Hono<AppBindings>();

hostSelfRoute.get("/", async (c) => {
  const token = bearerToken(c.req.header("authorization"));
  const principal =
    token !== null && looksLikeOAuthToken(token)
      ? await authenticateGrant(c.env, new URL(c.req.url).origin, token)
      : await authenticate(c.env, token);
  if (principal === null) {
    throw new HTTPException(401, {
      res: Response.json(
        {
          error: {
            code: "unauthorized",
            message:
              token === null
                ? "a host token is required (Authorization: Bearer …)"
                : "this token is not valid here (unknown, revoked or expired)",
          },
        },
        { status: 401, headers: { "www-authenticate": 'Bearer realm="oubliette"' } },
      ),
    });
  }
  if (principal.kind !== "host")
    throw new AppError(
      "forbidden",
      "this is a caller's token, not a host token: hosts use a token from `host enrol`",
    );
  return c.json({ host_id: principal.hostId } satisfies HostSelf);
});
