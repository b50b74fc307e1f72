/** Caching hints of a cacheable 2026 result (SEP-2549): how long it is fresh, and for whom. */
export interface CacheHint {
  ttlMs: number;
  cacheScope: "public" | "private";
}

/**
 * The hints, one per kind of result. The catalogue (discover, `tools/list`) is the same for every
 * token and changes only with a deploy; what is read about one's own sessions changes with every
 * event and belongs to the token that read it.
 */
export const CacheHints = {
  catalogue: { ttlMs: 300_000, cacheScope: "public" },
  perToken: { ttlMs: 0, cacheScope: "private" },
} as const satisfies Record<string, CacheHint>;
