/**
 * Which Host and Origin headers the Worker accepts. The allowed sets come from configuration and
 * loopback names only, never from the request itself: a browser tricked by DNS rebinding sends a
 * Host and an Origin that agree with each other (`evil.example.com`), so "the Origin matches the
 * request's own URL" proves nothing.
 */

/** Origins configured for the Worker, already normalized (`URL.origin`). */
export interface OriginPolicy {
  /** OUBLIETTE_PUBLIC_ORIGINS: where the Worker is served. */
  publicOrigins: readonly string[];
  /** OUBLIETTE_ALLOWED_ORIGINS: other browser origins allowed to call. */
  allowedOrigins: readonly string[];
}

/** A Host header: a DNS name, an IPv4 address or a bracketed IPv6 address, and an optional port. */
const HOST_HEADER = /^(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** localhost, 127.0.0.0/8 and ::1 (as `URL.hostname` spells them; IPv6 keeps its brackets). */
export function isLoopbackHostname(hostname: string): boolean {
  if (hostname === "localhost" || hostname === "[::1]") return true;
  const octets = hostname.split(".");
  return (
    octets.length === 4 && octets[0] === "127" && octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255)
  );
}

/** The normalized hostname of a Host header, or null when it is not a well-formed host. */
export function hostnameOf(hostHeader: string): string | null {
  if (!HOST_HEADER.test(hostHeader)) return null;
  return parseUrl(`http://${hostHeader}`)?.hostname ?? null;
}

/** Whether the Worker answers to this Host: a loopback name or the host of a public origin. */
export function isAllowedHost(hostHeader: string, policy: OriginPolicy): boolean {
  const hostname = hostnameOf(hostHeader);
  if (hostname === null) return false;
  if (isLoopbackHostname(hostname)) return true;
  return policy.publicOrigins.some((origin) => parseUrl(origin)?.hostname === hostname);
}

/** Whether a browser at `origin` may call: a public origin, an allowed one, or loopback on any port. */
export function isAllowedOrigin(origin: string, policy: OriginPolicy): boolean {
  const url = parseUrl(origin);
  // Browsers send a bare serialized origin; anything else ("null", a path) is not one we allow.
  if (url === null || url.origin !== origin) return false;
  if ((url.protocol === "http:" || url.protocol === "https:") && isLoopbackHostname(url.hostname))
    return true;
  if (policy.publicOrigins.includes(origin)) return true;
  return policy.allowedOrigins.some((allowed) => parseUrl(allowed)?.origin === origin);
}
