import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import type { Env } from "../env.js";
import { createLog, errorMessage } from "../log.js";
import { objects } from "../objects/keys.js";
import type { GrantRow } from "../tokens/grant-store.js";
import { oauthRoles } from "./authorization-server.js";

const log = createLog({ component: "oauth" });

/**
 * Revokes a library grant (its access and refresh tokens) and the directory's grants for it. The
 * directory's status is what every check asks, so the grant stops working even if the library's
 * revocation fails (that is logged).
 */
export async function revokeOAuthGrant(
  env: Env,
  oauth: OAuthHelpers,
  grant: { oauthGrantId: string; userId: string },
): Promise<void> {
  await objects.tokens(env).revokeOauthGrant(grant.oauthGrantId);
  try {
    await oauth.revokeGrant(grant.oauthGrantId, grant.userId);
  } catch (error) {
    log.error("could not revoke an OAuth grant's tokens", {
      grant: grant.oauthGrantId,
      error: errorMessage(error),
    });
  }
}

/** Revokes the OAuth tokens of directory grants already revoked there (a token revoke, a grant revoke). */
export async function revokeGrantTokens(env: Env, rows: readonly GrantRow[]): Promise<void> {
  for (const row of rows) {
    if (row.oauthGrantId === null) continue;
    await revokeOAuthGrant(env, oauthRoles(row.issuer).server.getOAuthApi(env), {
      oauthGrantId: row.oauthGrantId,
      userId: row.oauthUserId,
    });
  }
}
