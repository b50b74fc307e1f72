/**
 * OUBLIETTE_PUBLIC_ORIGINS as the Worker reads it (worker/src/env.ts `originList`): comma-separated
 * bare `http(s)://host[:port]` origins. Restated here rather than imported because the Worker's
 * config module pulls in Durable Object types the scripts' tsconfig does not load; the unit test
 * pins both to the same examples.
 */

export interface PublicOrigins {
  /** Normalized (`URL.origin`). */
  origins: string[];
  /** Entries that are not origins: the deployed Worker fails its configuration on any of them. */
  invalid: string[];
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

export function parsePublicOrigins(list: string): PublicOrigins {
  const origins: string[] = [];
  const invalid: string[] = [];
  for (const entry of list.split(",").map((o) => o.trim())) {
    if (!entry) continue;
    const url = parseUrl(entry);
    const bare = url !== null && url.pathname === "/" && !url.search && !url.hash && !url.username;
    if (bare && (url.protocol === "https:" || url.protocol === "http:")) origins.push(url.origin);
    else invalid.push(entry);
  }
  return { origins, invalid };
}
