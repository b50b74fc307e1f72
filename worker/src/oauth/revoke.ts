import type { GrantSummary, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
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

/**
 * Revokes the OAuth tokens of directory grants already revoked there (a grant revoke, the token
 * it was signed in with revoked, its project deleted), and records each in the audit log with its
 * client: `by` did it, `why` says how.
 */
export async function revokeGrantTokens(
  env: Env,
  rows: readonly GrantRow[],
  by: string,
  why: "revoked" | "signing_token_revoked" | "project_deleted",
): Promise<void> {
  for (const row of rows) {
    if (row.oauthGrantId !== null) {
      await revokeOAuthGrant(env, oauthRoles(row.issuer).server.getOAuthApi(env), {
        oauthGrantId: row.oauthGrantId,
        userId: row.oauthUserId,
      });
    }
    try {
      await objects.audit(env).record({
        at: Date.now(),
        token_id: by,
        action: "oauth.grant_revoked",
        target: `${row.id} client=${row.clientId}`,
        outcome: why,
      });
    } catch (error) {
      log.error("could not write the audit log", { grant: row.id, error: errorMessage(error) });
    }
  }
}

/** Every grant the library holds for `userId`, page by page. */
export async function* userGrants(oauth: OAuthHelpers, userId: string): AsyncGenerator<GrantSummary> {
  let cursor: string | undefined;
  do {
    const listed = await oauth.listUserGrants(userId, cursor === undefined ? {} : { cursor });
    yield* listed.items;
    cursor = listed.cursor;
  } while (cursor !== undefined);
}
