import { DurableObject } from "cloudflare:workers";
import { randomHex } from "../auth/digest.js";
import type { Scope } from "../auth/scopes.js";
import type { Env } from "../env.js";
import { fail, ok, type Result } from "../errors.js";
import { createLog } from "../log.js";
import { statusOf, type TokenKind, type TokenRow, type TokenStatus, TokenStore } from "./token-store.js";

/** A token as listings show it: never the token or its hash, only a masked prefix. */
export interface TokenInfo {
  token_id: string;
  name: string;
  kind: TokenKind;
  scopes: string[];
  host_id: string | null;
  /** The first characters of the token, then an ellipsis. */
  prefix: string;
  status: TokenStatus;
  created_at: string;
  created_by: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** What authentication needs to know about a presented token. */
export interface TokenMatch {
  tokenId: string;
  kind: TokenKind;
  scopes: Scope[];
  hostId: string | null;
  status: TokenStatus;
  /** Epoch ms, so a cached match stops working the moment it expires. */
  expiresAt: number | null;
}

export interface CreateTokenInput {
  kind: TokenKind;
  name: string;
  scopes: Scope[];
  hostId: string | null;
  expiresAt: number | null;
  createdBy: string;
  sha256: string;
  prefix: string;
}

/** `last_used_at` is written at most this often per token (lookups are frequent). */
const TOUCH_EVERY_MS = 1_000;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function tokenInfo(row: TokenRow, now: number): TokenInfo {
  return {
    token_id: row.id,
    name: row.name,
    kind: row.kind,
    scopes: row.scopes,
    host_id: row.hostId,
    prefix: `${row.prefix}…`,
    status: statusOf(row, now),
    created_at: new Date(row.createdAt).toISOString(),
    created_by: row.createdBy,
    expires_at: iso(row.expiresAt),
    revoked_at: iso(row.revokedAt),
    last_used_at: iso(row.lastUsedAt),
  };
}

function matchOf(row: TokenRow, now: number): TokenMatch {
  return {
    tokenId: row.id,
    kind: row.kind,
    scopes: row.scopes,
    hostId: row.hostId,
    status: statusOf(row, now),
    expiresAt: row.expiresAt,
  };
}

/**
 * The directory of issued tokens (caller and host tokens; the bootstrap tokens of the
 * configuration are not here). It is asked only when a presented token is not in an isolate's
 * short cache, so it is never on every relayed call's path.
 */
export class TokenDirectoryDurableObject extends DurableObject<Env> {
  readonly #store: TokenStore;
  readonly #log = createLog({ component: "token-directory" });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new TokenStore(ctx.storage.sql);
  }

  async create(input: CreateTokenInput): Promise<Result<TokenInfo>> {
    const now = Date.now();
    if (input.hostId !== null && this.#store.activeForHost(input.hostId, now).length > 0) {
      return fail(
        "conflict",
        `host ${input.hostId} already has an active token; revoke it first (host revoke) to issue a new one`,
      );
    }
    const row: TokenRow = {
      id: `tok_${randomHex(8)}`,
      sha256: input.sha256,
      kind: input.kind,
      name: input.name,
      scopes: input.scopes,
      hostId: input.hostId,
      prefix: input.prefix,
      createdAt: now,
      createdBy: input.createdBy,
      expiresAt: input.expiresAt,
      revokedAt: null,
      lastUsedAt: null,
    };
    this.#store.insert(row);
    this.#log.info("token created", { token: row.id, kind: row.kind, scopes: row.scopes.join(",") });
    return ok(tokenInfo(row, now));
  }

  /** Finds a token by its hash (indexed) and notes its use. */
  async lookup(sha256: string): Promise<TokenMatch | null> {
    const row = this.#store.byHash(sha256);
    if (!row) return null;
    const now = Date.now();
    const match = matchOf(row, now);
    if (match.status === "active" && (row.lastUsedAt === null || now - row.lastUsedAt >= TOUCH_EVERY_MS)) {
      this.#store.touch(row.id, now);
    }
    return match;
  }

  /** A token by id, for acting later with its authority (a schedule's runs); not a use of it. */
  async match(tokenId: string): Promise<TokenMatch | null> {
    const row = this.#store.byId(tokenId);
    return row ? matchOf(row, Date.now()) : null;
  }

  async status(tokenId: string): Promise<TokenStatus | "unknown"> {
    const row = this.#store.byId(tokenId);
    return row ? statusOf(row, Date.now()) : "unknown";
  }

  async get(tokenId: string): Promise<TokenInfo | null> {
    const row = this.#store.byId(tokenId);
    return row ? tokenInfo(row, Date.now()) : null;
  }

  async list(kind: TokenKind | null): Promise<TokenInfo[]> {
    const now = Date.now();
    return this.#store.list(kind).map((row) => tokenInfo(row, now));
  }

  async revoke(tokenId: string): Promise<Result<TokenInfo>> {
    const row = this.#store.byId(tokenId);
    if (!row) return fail("not_found", `no token ${tokenId}`);
    const now = Date.now();
    this.#store.revoke(tokenId, now);
    this.#log.info("token revoked", { token: tokenId });
    const revoked = this.#store.byId(tokenId) ?? row;
    return ok(tokenInfo(revoked, now));
  }

  /** Revokes the active host token(s) of a host; returns their ids. */
  async revokeHost(hostId: string): Promise<string[]> {
    const now = Date.now();
    const active = this.#store.activeForHost(hostId, now);
    for (const row of active) this.#store.revoke(row.id, now);
    return active.map((row) => row.id);
  }

  /** Revokes every token scoped to a project (it was deleted); returns how many. */
  async revokeProject(projectId: string): Promise<number> {
    const now = Date.now();
    const rows = this.#store.withProjectScope(projectId).filter((row) => statusOf(row, now) === "active");
    for (const row of rows) this.#store.revoke(row.id, now);
    return rows.length;
  }
}
