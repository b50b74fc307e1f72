import { z } from "zod";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import { digestsEqual, sha256Hex } from "./digest.js";
import { type Scope, ScopeSchema } from "./scopes.js";

/** Who made a request: a caller token (with scopes) or a host-agent token. */
export interface CallerPrincipal {
  kind: "caller";
  tokenId: string;
  scopes: Scope[];
}
export interface HostPrincipal {
  kind: "host";
  tokenId: string;
}
export type Principal = CallerPrincipal | HostPrincipal;

export const CallerPrincipalSchema = z.object({
  kind: z.literal("caller"),
  tokenId: z.string(),
  scopes: z.array(ScopeSchema),
});

interface TokenRecord {
  id: string;
  kind: "caller" | "host";
  sha256: string;
  scopes: Scope[];
}

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

/** Resolves a presented token to a principal; every record is compared, in constant time each. */
export async function authenticate(env: Env, token: string | null): Promise<Principal | null> {
  if (!token || token.length > 512) return null;
  const [records, presented] = await Promise.all([tokensFor(env), sha256Hex(token)]);
  let found: TokenRecord | null = null;
  for (const record of records) if (digestsEqual(record.sha256, presented)) found = record;
  if (!found) return null;
  return found.kind === "host"
    ? { kind: "host", tokenId: found.id }
    : { kind: "caller", tokenId: found.id, scopes: found.scopes };
}
