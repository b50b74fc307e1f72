import { authenticate, bearerToken, type Principal, sessionBoundRefusal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { authenticateGrant, looksLikeOAuthToken } from "../oauth/grant-principal.js";

/**
 * What an HTTP request's `Authorization: Bearer` makes of it: no token, one that is not valid
 * (unknown, expired, revoked), a droid's session key (valid, but only inside its session), or a
 * principal.
 */
export type Bearer =
  | { kind: "none" }
  | { kind: "invalid" }
  | { kind: "session_bound"; message: string }
  | { kind: "principal"; principal: Principal };

/**
 * The one place a bearer token becomes a principal for HTTP: an API token (configured or issued)
 * or an OAuth access token issued by this Worker for `origin`. A key minted for a session's droid
 * is refused here, so no public route can accept it; only the session object, on the droid's own
 * path, authenticates it (session/host-input.ts).
 */
export async function bearerPrincipal(
  env: Env,
  origin: string,
  authorization: string | undefined,
): Promise<Bearer> {
  const token = bearerToken(authorization);
  if (token === null) return { kind: "none" };
  const principal = looksLikeOAuthToken(token)
    ? await authenticateGrant(env, origin, token)
    : await authenticate(env, token);
  if (principal === null) return { kind: "invalid" };
  const refused = sessionBoundRefusal(principal);
  if (refused !== null) return { kind: "session_bound", message: refused };
  return { kind: "principal", principal };
}
