/**
 * Where the OAuth surface lives, relative to the Worker's origin. The MCP endpoint (`/mcp`) is
 * the one protected resource; the Worker's origin is its authorization server (issuer).
 */
export const OAuthPaths = {
  /** The page a person signs in on and consents (ours: the library leaves it to the application). */
  authorize: "/oauth/authorize",
  /** The sign-in form's target (an API token pasted once becomes a browser session). */
  signIn: "/oauth/sign-in",
  /** Token, refresh and RFC 7009 revocation (the library's). */
  token: "/oauth/token",
  /** RFC 7591 Dynamic Client Registration, the fallback for clients without CIMD (the library's). */
  register: "/oauth/register",
  /** RFC 8414 authorization server metadata (the library's). */
  serverMetadata: "/.well-known/oauth-authorization-server",
  /** RFC 9728 protected resource metadata: path-aware for /mcp, and at the root. */
  resourceMetadata: "/.well-known/oauth-protected-resource",
  /** The protected resource. */
  resource: "/mcp",
} as const;

/** The canonical resource identifier of /mcp at an origin (the audience of its tokens). */
export function resourceOf(origin: string): string {
  return `${origin}${OAuthPaths.resource}`;
}

/** The RFC 9728 metadata URL of /mcp at an origin (what a 401 points at). */
export function resourceMetadataUrl(origin: string): string {
  return `${origin}${OAuthPaths.resourceMetadata}${OAuthPaths.resource}`;
}
