import { z } from "zod";
import { type Scope, ScopeSchema, scopeProject } from "../auth/scopes.js";
import { AppError, unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { oauthStorage } from "../oauth/authorization-server.js";
import { revokeGrantTokens } from "../oauth/revoke.js";
import { objects } from "../objects/keys.js";
import { mintToken } from "../tokens/mint.js";
import { GRANT_PREFIX, grantInfo } from "../tokens/token-directory-do.js";
import { action, defineActionTool } from "./define.js";

/** When an expiry given in hours falls (epoch ms), or null for none. */
export function expiryOf(hours: number | undefined): number | null {
  return hours === undefined ? null : Date.now() + Math.round(hours * 3_600_000);
}

/** Refuses a project scope whose project does not exist. */
async function requireScopeProjects(ctx: ToolContext, scopes: Scope[]): Promise<void> {
  for (const scope of scopes) {
    const projectId = scopeProject(scope);
    if (projectId !== null && !(await objects.projectDirectory(ctx.env).exists(projectId))) {
      throw new AppError("invalid_arguments", `scope ${scope}: no project ${projectId}`);
    }
  }
}

const TokenIdSchema = z
  .string()
  .regex(
    /^(tok|grt)_[0-9a-f]{16}$/,
    "token_id looks like tok_ (an API token) or grt_ (an OAuth grant) followed by 16 hex digits",
  )
  .describe("Token id, or OAuth grant id (grt_…), from token list.");

export const tokenTool = defineActionTool({
  name: "token",
  title: "API tokens",
  description:
    "Create, list and revoke API tokens (admin only; admin:ro may list). A token is shown once, at creation; only its hash is kept.",
  actions: {
    create: action({
      description:
        "Create a token with a scope: admin, admin:ro, project:<id> or project:<id>:ro. Returns the token once.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: {
        name: "teammate-readonly",
        scope: "project:prj_0123456789abcdef01234567:ro",
        expires_in_hours: 720,
      },
      input: z.object({
        name: z.string().min(1).max(128).describe("What the token is for."),
        scope: ScopeSchema.describe("admin, admin:ro, project:<id> or project:<id>:ro."),
        expires_in_hours: z
          .number()
          .positive()
          .max(24 * 365 * 10)
          .optional()
          .describe("The token stops working after this long (default: never)."),
      }),
      async handler(args, ctx) {
        await requireScopeProjects(ctx, [args.scope]);
        const minted = await mintToken();
        const info = unwrap(
          await objects.tokens(ctx.env).create({
            kind: "caller",
            name: args.name,
            scopes: [args.scope],
            hostId: null,
            expiresAt: expiryOf(args.expires_in_hours),
            createdBy: ctx.principal.tokenId,
            sha256: minted.sha256,
            prefix: minted.prefix,
          }),
        );
        ctx.auditTarget(info.token_id);
        return { ...info, token: minted.token, note: "Store the token now: it is not shown again." };
      },
    }),
    list: action({
      description:
        "List tokens (masked): id, name, scopes, status, expiry, last use; and the OAuth grants apps signed in with (client, scopes, who signed in, created, last use).",
      access: "admin_read",
      target: "global",
      timing: "sync",
      example: {},
      input: z.object({ include_revoked: z.boolean().default(false) }),
      async handler(args, ctx) {
        const directory = objects.tokens(ctx.env);
        const [tokens, grants] = await Promise.all([directory.list(null), directory.listGrants()]);
        const shown = <T extends { status: string }>(list: T[]) =>
          args.include_revoked ? list : list.filter((t) => t.status !== "revoked");
        return { tokens: shown(tokens), grants: shown(grants) };
      },
    }),
    register_client: action({
      description:
        "Pre-register an OAuth client (for a client that neither publishes a metadata document nor registers itself): its name and exact redirect URIs; a confidential client gets a secret, shown once.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: {
        client_name: "Team dashboard",
        redirect_uris: ["https://dashboard.example.com/oauth/callback"],
      },
      input: z.object({
        client_name: z.string().min(1).max(128).describe("The name the consent page shows."),
        redirect_uris: z
          .array(z.url({ protocol: /^https?$/ }).max(2_048))
          .min(1)
          .max(10)
          .describe("Exact redirect URIs (https, or http on a loopback host)."),
        confidential: z
          .boolean()
          .default(false)
          .describe("A client that keeps a secret (a server), rather than a public one (PKCE only)."),
      }),
      async handler(args, ctx) {
        const client = await oauthStorage(ctx.env).createClient({
          clientName: args.client_name,
          redirectUris: args.redirect_uris,
          tokenEndpointAuthMethod: args.confidential ? "client_secret_basic" : "none",
          grantTypes: ["authorization_code", "refresh_token"],
          responseTypes: ["code"],
        });
        ctx.auditTarget(client.clientId);
        return {
          client_id: client.clientId,
          client_name: args.client_name,
          redirect_uris: args.redirect_uris,
          ...(client.clientSecret
            ? { client_secret: client.clientSecret, note: "Store the secret now: it is not shown again." }
            : {}),
        };
      },
    }),
    revoke: action({
      description:
        "Revoke a token or an OAuth grant by id; it stops working everywhere within seconds. Revoking a token revokes the grants made by signing in with it.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: { token_id: "tok_0123456789abcdef" },
      input: z.object({ token_id: TokenIdSchema }),
      async handler(args, ctx) {
        ctx.auditTarget(args.token_id);
        if (args.token_id.startsWith(GRANT_PREFIX)) {
          const grant = unwrap(await objects.tokens(ctx.env).revokeGrant(args.token_id));
          await revokeGrantTokens(ctx.env, [grant], ctx.principal.tokenId, "revoked");
          return grantInfo(grant, Date.now());
        }
        const { grants, ...revoked } = unwrap(await objects.tokens(ctx.env).revoke(args.token_id));
        await revokeGrantTokens(ctx.env, grants, ctx.principal.tokenId, "signing_token_revoked");
        if (revoked.kind === "host" && revoked.host_id !== null) {
          await objects.hostRegistry(ctx.env).disconnectHost({
            hostId: revoked.host_id,
            reason: "its token was revoked",
            tokenIds: [revoked.token_id],
          });
        }
        return revoked;
      },
    }),
  },
});
