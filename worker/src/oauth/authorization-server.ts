import { OAuthAuthorizationServer, OAuthResourceServer } from "@cloudflare/workers-oauth-provider";
import { config, type Env } from "../env.js";
import { createLog } from "../log.js";
import { OAuthPaths, resourceOf } from "./endpoints.js";
import { BASELINE_SCOPES, STATIC_SCOPES } from "./grant-scopes.js";

const log = createLog({ component: "oauth" });

/** Access tokens live an hour; a client refreshes them (rotating its refresh token) as it needs. */
const ACCESS_TOKEN_TTL_S = 3_600;
/** A grant lives this long from its code exchange (a person signs in again after it). */
const REFRESH_TOKEN_TTL_S = 30 * 24 * 3_600;
/** Self-registered (DCR) clients no one uses go after this long. */
const CLIENT_REGISTRATION_TTL_S = 30 * 24 * 3_600;

/**
 * The Worker's OAuth roles at one origin (`@cloudflare/workers-oauth-provider`): the
 * authorization server (issuer: the origin; metadata, token, revocation and registration
 * endpoints, CIMD) and /mcp as its one protected resource (RFC 9728 metadata). An origin's issuer
 * and resource are fixed at construction, and the Worker answers at each configured public origin
 * and, in development, at whatever loopback origin it runs on: one pair per origin, made once.
 */
export interface OAuthRoles {
  origin: string;
  server: OAuthAuthorizationServer<Env>;
  /** Serves /mcp's RFC 9728 metadata (the MCP route itself authenticates on its own). */
  resource: OAuthResourceServer<Env>;
}

const byOrigin = new Map<string, OAuthRoles>();
/** Origins are few (the configured ones, or one loopback origin in development); bound anyway. */
const MAX_ORIGINS = 16;

export function oauthRoles(origin: string): OAuthRoles {
  const known = byOrigin.get(origin);
  if (known) return known;
  const server = new OAuthAuthorizationServer<Env>({
    issuer: origin,
    resources: [resourceOf(origin)],
    authorizeEndpoint: OAuthPaths.authorize,
    tokenEndpoint: OAuthPaths.token,
    clientRegistrationEndpoint: OAuthPaths.register,
    // Project scopes (project:<id>, project:<id>:ro) are granted too: they name projects, which come
    // and go, so the catalogue lists the installation-wide ones (see grant-scopes.ts).
    scopesSupported: [...STATIC_SCOPES],
    clientIdMetadataDocumentEnabled: true,
    accessTokenTTL: ACCESS_TOKEN_TTL_S,
    refreshTokenTTL: REFRESH_TOKEN_TTL_S,
    clientRegistrationTTL: CLIENT_REGISTRATION_TTL_S,
    onError: ({ code, description, status, internal }) => {
      log.warn("oauth error", { code, description, status, reason: internal?.reason ?? null });
    },
  });
  const resource = new OAuthResourceServer<Env>({
    resourceMetadata: {
      resource: resourceOf(origin),
      authorization_servers: [origin],
      bearer_methods_supported: ["header"],
      resource_name: "Oubliette Edge",
    },
    requiredScopes: [...BASELINE_SCOPES],
    validateToken: () => async () => null,
    handler: { fetch: () => new Response(null, { status: 404 }) },
  });
  if (byOrigin.size >= MAX_ORIGINS) {
    const oldest = byOrigin.keys().next().value;
    if (oldest !== undefined) byOrigin.delete(oldest);
  }
  const roles = { origin, server, resource };
  byOrigin.set(origin, roles);
  return roles;
}

/**
 * The OAuth library's helpers for what does not depend on the issuer (clients, grants: one KV
 * namespace for every origin), where no request says which origin: an admin tool's work.
 */
export function oauthStorage(env: Env) {
  return oauthRoles(config(env).publicOrigins[0] ?? "http://127.0.0.1").server.getOAuthApi(env);
}
