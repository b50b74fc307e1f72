import { z } from "zod";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { objects } from "../objects/keys.js";
import type { TokenMatch } from "../tokens/token-directory-do.js";
import { digestsEqual, sha256Hex } from "./digest.js";
import { type Scope, ScopeSchema } from "./scopes.js";

/**
 * Who made a request: a caller token (with scopes) or a host-agent token. `issued` tokens come
 * from the token directory and can be revoked or expire; the configured bootstrap tokens cannot.
 */
export interface CallerPrincipal {
  kind: "caller";
  /** The API token's id, or the OAuth grant's (`grt_…`). */
  tokenId: string;
  scopes: Scope[];
  issued?: boolean;
  /** An OAuth access token: a missing scope is answered with a step-up challenge (HTTP 403). */
  oauth?: boolean;
  /**
   * The session a key minted for its droid belongs to: accepted only on that session's own path
   * (its session object), refused on every public route (`sessionBoundRefusal`).
   */
  boundSession?: string;
}
export interface HostPrincipal {
  kind: "host";
  tokenId: string;
  /** The host an issued host token is bound to; null for the configured token (any host id). */
  hostId: string | null;
  issued?: boolean;
}
export type Principal = CallerPrincipal | HostPrincipal;

export const CallerPrincipalSchema = z.object({
  kind: z.literal("caller"),
  tokenId: z.string(),
  scopes: z.array(ScopeSchema),
  issued: z.boolean().optional(),
  oauth: z.boolean().optional(),
  boundSession: z.string().optional(),
});
export const HostPrincipalSchema = z.object({
  kind: z.literal("host"),
  tokenId: z.string(),
  hostId: z.string().nullable(),
  issued: z.boolean().optional(),
});

interface TokenRecord {
  id: string;
  kind: "caller" | "host";
  sha256: string;
  scopes: Scope[];
}

/** What every issued token looks like: `oub_` and 64 hex digits. */
export const TOKEN_SHAPE = /^oub_[0-9a-f]{64}$/;

const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "must be a lowercase hex SHA-256");

/** Extra caller tokens from configuration, known only by their hashes. */
const StaticTokensSchema = z.array(
  z.object({
    id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
    sha256: Sha256Schema,
    scopes: z.array(ScopeSchema).min(1),
  }),
);

async function configuredHash(
  plain: string | undefined,
  hash: string | undefined,
  name: string,
): Promise<string | null> {
  if (hash) {
    const parsed = Sha256Schema.safeParse(hash.trim().toLowerCase());
    if (!parsed.success)
      throw new AppError("config_error", `${name}_SHA256 ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }
  return plain ? sha256Hex(plain) : null;
}

async function loadTokens(env: Env): Promise<TokenRecord[]> {
  const records: TokenRecord[] = [];
  const admin = await configuredHash(
    env.OUBLIETTE_ADMIN_TOKEN,
    env.OUBLIETTE_ADMIN_TOKEN_SHA256,
    "OUBLIETTE_ADMIN_TOKEN",
  );
  if (admin) records.push({ id: "admin", kind: "caller", sha256: admin, scopes: ["admin"] });
  const host = await configuredHash(
    env.OUBLIETTE_HOST_TOKEN,
    env.OUBLIETTE_HOST_TOKEN_SHA256,
    "OUBLIETTE_HOST_TOKEN",
  );
  if (host) records.push({ id: "host", kind: "host", sha256: host, scopes: [] });
  if (env.OUBLIETTE_STATIC_TOKENS) {
    let raw: unknown;
    try {
      raw = JSON.parse(env.OUBLIETTE_STATIC_TOKENS);
    } catch {
      throw new AppError("config_error", "OUBLIETTE_STATIC_TOKENS is not valid JSON");
    }
    const parsed = StaticTokensSchema.safeParse(raw);
    if (!parsed.success)
      throw new AppError("config_error", `OUBLIETTE_STATIC_TOKENS: ${parsed.error.issues[0]?.message}`);
    for (const t of parsed.data)
      records.push({ id: t.id, kind: "caller", sha256: t.sha256, scopes: t.scopes });
  }
  if (records.length === 0)
    throw new AppError("config_error", "no tokens configured: set OUBLIETTE_ADMIN_TOKEN");
  return records;
}

// Hashing the configured tokens once per isolate; the env object is stable for an isolate.
const cache = new WeakMap<object, Promise<TokenRecord[]>>();

function tokensFor(env: Env): Promise<TokenRecord[]> {
  let tokens = cache.get(env);
  if (!tokens) {
    tokens = loadTokens(env);
    cache.set(env, tokens);
    tokens.catch(() => cache.delete(env));
  }
  return tokens;
}

/** The bearer token of an Authorization header, or null. */
export function bearerToken(header: string | null | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** How long an isolate trusts what it learned about a token: a revocation takes effect within this. */
export const TOKEN_CACHE_MS = 2_000;
const CACHE_LIMIT = 5_000;

interface Cached<T> {
  value: T;
  until: number;
}

/** A small TTL cache, bounded (the oldest entry goes first). */
export class TtlCache<T> {
  readonly #entries = new Map<string, Cached<T>>();

  get(key: string, now: number): T | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    if (hit.until > now) return hit.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: string, value: T, now: number): void {
    if (this.#entries.size >= CACHE_LIMIT) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, until: now + TOKEN_CACHE_MS });
  }
}

const issuedByHash = new TtlCache<TokenMatch | null>();
const statusById = new TtlCache<boolean>();

/** An issued caller token's principal, with its session binding when it has one. */
function issuedCaller(match: TokenMatch): CallerPrincipal {
  const principal: CallerPrincipal = {
    kind: "caller",
    tokenId: match.tokenId,
    scopes: match.scopes,
    issued: true,
  };
  if (match.sessionId !== null) principal.boundSession = match.sessionId;
  return principal;
}

function principalOfMatch(match: TokenMatch, now: number): Principal | null {
  if (match.status !== "active") return null;
  if (match.expiresAt !== null && match.expiresAt <= now) return null;
  return match.kind === "host"
    ? { kind: "host", tokenId: match.tokenId, hostId: match.hostId, issued: true }
    : issuedCaller(match);
}

/**
 * Why a principal may not be used from outside any session, or null when it may: a key minted
 * for a session's droid works only on that session's path (container, host, session tunnel), so
 * a key copied out of a container is refused everywhere else. Every public authentication asks.
 */
export function sessionBoundRefusal(principal: Principal): string | null {
  if (principal.kind !== "caller" || principal.boundSession === undefined) return null;
  return `this key was issued to session ${principal.boundSession} and works only from inside that session`;
}

/**
 * Resolves a presented token to a principal: first the configured tokens (every one compared, in
 * constant time), then the token directory by the token's hash (cached for TOKEN_CACHE_MS).
 */
export async function authenticate(env: Env, token: string | null): Promise<Principal | null> {
  if (!token || token.length > 512) return null;
  const [records, presented] = await Promise.all([tokensFor(env), sha256Hex(token)]);
  let found: TokenRecord | null = null;
  for (const record of records) if (digestsEqual(record.sha256, presented)) found = record;
  if (found) {
    return found.kind === "host"
      ? { kind: "host", tokenId: found.id, hostId: null }
      : { kind: "caller", tokenId: found.id, scopes: found.scopes };
  }
  if (!TOKEN_SHAPE.test(token)) return null;
  const now = Date.now();
  let match = issuedByHash.get(presented, now);
  if (match === undefined) {
    match = await objects.tokens(env).lookup(presented);
    issuedByHash.set(presented, match, now);
  }
  return match === null ? null : principalOfMatch(match, now);
}

/**
 * Whether a principal's token still works (for long-lived streams and sockets, which check it
 * every few seconds). Configured tokens always do; issued ones are asked of the directory, cached
 * for TOKEN_CACHE_MS.
 */
export async function stillValid(env: Env, principal: Principal): Promise<boolean> {
  if (!principal.issued) return true;
  const now = Date.now();
  let active = statusById.get(principal.tokenId, now);
  if (active === undefined) {
    active = (await objects.tokens(env).status(principal.tokenId)) === "active";
    statusById.set(principal.tokenId, active, now);
  }
  return active;
}

/** A caller token's authority now, by id: its principal, or why it no longer has any. */
export type Authority = { ok: true; principal: CallerPrincipal } | { ok: false; reason: string };

/**
 * Resolves a caller token by its id rather than a presented secret, for work done later with its
 * authority (a schedule's runs). `issued` says where the id lives: the token directory (revocable,
 * may expire) or the configuration. Not cached: such work is rare and must see a revocation.
 */
export async function principalById(env: Env, tokenId: string, issued: boolean): Promise<Authority> {
  if (!issued) {
    const record = (await tokensFor(env)).find((r) => r.id === tokenId && r.kind === "caller");
    return record
      ? { ok: true, principal: { kind: "caller", tokenId, scopes: record.scopes } }
      : { ok: false, reason: `token ${tokenId} is no longer configured` };
  }
  const match = await objects.tokens(env).match(tokenId);
  if (match === null || match.kind !== "caller") {
    return { ok: false, reason: `token ${tokenId} no longer exists` };
  }
  const now = Date.now();
  if (match.status === "revoked") return { ok: false, reason: `token ${tokenId} was revoked` };
  if (match.status === "expired" || (match.expiresAt !== null && match.expiresAt <= now)) {
    return { ok: false, reason: `token ${tokenId} expired` };
  }
  return { ok: true, principal: issuedCaller(match) };
}
