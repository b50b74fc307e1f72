import { resourceMetadataUrl } from "./endpoints.js";
import { BASELINE_SCOPES } from "./grant-scopes.js";

/**
 * The `WWW-Authenticate` of a 401 from a protected route (RFC 6750, RFC 9728 §5.1): where the
 * resource's metadata is, hence its authorization server, and the scope to ask for first.
 */
export function bearerChallenge(origin: string, error: "invalid_token" | null): string {
  const parts = [
    'Bearer realm="oubliette"',
    ...(error === null ? [] : [`error="${error}"`]),
    `resource_metadata="${resourceMetadataUrl(origin)}"`,
    `scope="${BASELINE_SCOPES.join(" ")}"`,
  ];
  return parts.join(", ");
}
