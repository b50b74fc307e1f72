/**
 * The API key a session's droid gets for Oubliette's own tools. Either the server issues one
 * (`oubliette_access`: `project` or `project:ro`, scoped to the session's project, bound to the
 * session so that it works only from inside it, expiring with the session's lifetime cap and
 * revoked when the session ends), or the caller passes a key it holds (`oubliette_api_key`: the
 * droid can do exactly what that key allows, never more, wherever the caller could use it). The
 * key goes to the droid's environment only; it is never put in an event or a log.
 */
import { API_KEY_ENV } from "../../../protocol/oubliette-tools.js";
import { authenticate, type CallerPrincipal, sessionBoundRefusal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { mintToken } from "../tokens/mint.js";

export type OublietteAccess = "none" | "project" | "project:ro";

export interface DroidKey {
  /** The environment the droid gets it in. */
  env: Record<string, string>;
  /** The token the server issued for this session (revoked when it ends), or null for a caller's key. */
  issuedTokenId: string | null;
}

export async function droidKey(
  env: Env,
  request: { access: OublietteAccess; apiKey: string | undefined },
  session: { sessionId: string; projectId: string; owner: CallerPrincipal; lifetimeMs: number },
): Promise<DroidKey | null> {
  if (request.apiKey !== undefined) {
    if (request.access !== "none")
      throw new AppError("invalid_arguments", "give oubliette_access or oubliette_api_key, not both");
    const principal = await authenticate(env, request.apiKey);
    if (principal?.kind !== "caller")
      throw new AppError("invalid_arguments", "oubliette_api_key is not a valid, unexpired caller token");
    // Another session's key would be refused in this one: say so now rather than give the droid a dead key.
    const bound = sessionBoundRefusal(principal);
    if (bound !== null)
      throw new AppError("invalid_arguments", `oubliette_api_key: ${bound}; use oubliette_access instead`);
    return { env: { [API_KEY_ENV]: request.apiKey }, issuedTokenId: null };
  }
  if (request.access === "none") return null;
  const minted = await mintToken();
  const scope =
    request.access === "project" ? `project:${session.projectId}` : `project:${session.projectId}:ro`;
  const info = unwrap(
    await objects.tokens(env).create({
      kind: "caller",
      name: `session ${session.sessionId}`,
      scopes: [scope as `project:${string}`],
      hostId: null,
      expiresAt: session.lifetimeMs > 0 ? Date.now() + session.lifetimeMs : null,
      createdBy: session.owner.tokenId,
      sha256: minted.sha256,
      prefix: minted.prefix,
      // Bound to this session: refused on every public route and by every other session.
      sessionId: session.sessionId,
    }),
  );
  return { env: { [API_KEY_ENV]: minted.token }, issuedTokenId: info.token_id };
}
