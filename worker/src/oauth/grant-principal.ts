import { z } from "zod";
import { ScopeSchema } from "../auth/scopes.js";
import { type CallerPrincipal, TtlCache } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { objects } from "../objects/keys.js";
import type { GrantMatch } from "../tokens/token-directory-do.js";
import { oauthRoles } from "./authorization-server.js";
import { resourceOf } from "./endpoints.js";

/** What a grant's access tokens carry (encrypted by the library): the directory's grant id. */
export const GrantPropsSchema = z.object({ grant: z.string().regex(/^grt_[0-9a-f]{16}$/) });
export type GrantProps = z.infer<typeof GrantPropsSchema>;

/** An OAuth access token looks like `<user>:<grant>:<secret>`; API tokens never hold a colon. */
export function looksLikeOAuthToken(token: string): boolean {
  return token.includes(":") && token.length <= 512;
}

const grants = new TtlCache<GrantMatch | null>();

/**
 * Resolves an OAuth access token presented at `origin`: the library checks it (its hash, expiry
 * and audience: /mcp at this origin), then the directory says whether its grant still stands
 * (cached as briefly as a token's status, so a revocation takes effect within seconds). The
 * principal's scopes are the token's, within the grant's.
 */
export async function authenticateGrant(
  env: Env,
  origin: string,
  token: string,
): Promise<CallerPrincipal | null> {
  if (!looksLikeOAuthToken(token)) return null;
  const validated = await oauthRoles(origin).server.validateToken(resourceOf(origin), token, env);
  if (validated === null) return null;
  const props = GrantPropsSchema.safeParse(validated.props);
  if (!props.success) return null;
  const now = Date.now();
  let match = grants.get(props.data.grant, now);
  if (match === undefined) {
    match = await objects.tokens(env).lookupGrant(props.data.grant);
    grants.set(props.data.grant, match, now);
  }
  if (match === null || match.status !== "active") return null;
  const scopes = validated.scope.flatMap((raw) => {
    const scope = ScopeSchema.safeParse(raw);
    return scope.success && match.scopes.includes(scope.data) ? [scope.data] : [];
  });
  return { kind: "caller", tokenId: match.grantId, scopes, issued: true, oauth: true };
}
