import { DurableObject } from "cloudflare:workers";
import { randomHex } from "../auth/digest.js";
import type { Scope } from "../auth/scopes.js";
import type { Env } from "../env.js";
import { fail, ok, type Result } from "../errors.js";
import { createLog } from "../log.js";
import { type GrantRow, GrantStore, grantStatus } from "./grant-store.js";
import { type SigninRow, SigninStore } from "./signin-store.js";
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
  /** The session a key minted for its droid belongs to (it works only from inside it); else null. */
  session_id: string | null;
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
  /** The session a minted droid key is bound to; null for every other token. */
  sessionId: string | null;
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
  /** Binds a key minted for a session's droid to that session (session/droid-key.ts). */
  sessionId?: string;
}

/** An OAuth grant as listings show it (beside the API tokens). */
export interface GrantInfo {
  grant_id: string;
  client_id: string;
  client_name: string;
  /** A CIMD client, whose name and client_id URL were fetched from its own domain; false: self-registered (DCR). */
  client_verified: boolean;
  redirect_uri: string;
  scopes: string[];
  /** The API token the person signed in with; revoking it revokes this grant. */
  signed_in_as: string;
  status: TokenStatus;
  created_at: string;
  last_used_at: string | null;
  last_refreshed_at: string | null;
  revoked_at: string | null;
}

/** What authentication needs to know about a grant. */
export interface GrantMatch {
  grantId: string;
  scopes: Scope[];
  status: TokenStatus;
  clientId: string;
}

export function grantInfo(row: GrantRow, now: number): GrantInfo {
  return {
    grant_id: row.id,
    client_id: row.clientId,
    client_name: row.clientName,
    client_verified: row.clientVerified,
    redirect_uri: row.redirectUri,
    scopes: row.scopes,
    signed_in_as: row.signedInAs,
    status: grantStatus(row, now),
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: iso(row.lastUsedAt),
    last_refreshed_at: iso(row.lastRefreshedAt),
    revoked_at: iso(row.revokedAt),
  };
}

/** What a grant's id starts with (API tokens' with `tok_`). */
export const GRANT_PREFIX = "grt_";

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
    session_id: row.sessionId,
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
    sessionId: row.sessionId,
  };
}

/**
 * The directory of issued tokens (caller and host tokens; the bootstrap tokens of the
 * configuration are not here). It is asked only when a presented token is not in an isolate's
 * short cache, so it is never on every relayed call's path.
 */
export class TokenDirectoryDurableObject extends DurableObject<Env> {
  readonly #store: TokenStore;
  readonly #grants: GrantStore;
  readonly #signins: SigninStore;
  readonly #log = createLog({ component: "token-directory" });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new TokenStore(ctx.storage.sql);
    this.#grants = new GrantStore(ctx.storage.sql);
    this.#signins = new SigninStore(ctx.storage.sql);
  }

  /**
   * The installation's key for integrity-protected MCP `requestState` (input-required rounds),
   * made at random on first use and kept here, unless `OUBLIETTE_REQUEST_STATE_KEY` is set.
   */
  async requestStateKey(): Promise<string> {
    const kept = this.ctx.storage.kv.get<string>("request_state_key");
    if (kept !== undefined) return kept;
    const key = randomHex(32);
    this.ctx.storage.kv.put("request_state_key", key);
    return key;
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
      sessionId: input.sessionId ?? null,
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

  /** A token's or a grant's (`grt_…`) status: what open streams re-check every few seconds. */
  async status(tokenId: string): Promise<TokenStatus | "unknown"> {
    if (tokenId.startsWith(GRANT_PREFIX)) {
      const grant = this.#grants.byId(tokenId);
      return grant ? grantStatus(grant, Date.now()) : "unknown";
    }
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

  /**
   * Revokes a token, the sign-ins made with it and the grants made by signing in with it (whose
   * rows come back, for their OAuth tokens to be revoked too).
   */
  async revoke(tokenId: string): Promise<Result<TokenInfo & { grants: GrantRow[] }>> {
    const row = this.#store.byId(tokenId);
    if (!row) return fail("not_found", `no token ${tokenId}`);
    const now = Date.now();
    this.#store.revoke(tokenId, now);
    const grants = this.#revokeSignedInAs(tokenId, now);
    this.#log.info("token revoked", { token: tokenId, grants: grants.length });
    const revoked = this.#store.byId(tokenId) ?? row;
    return ok({ ...tokenInfo(revoked, now), grants });
  }

  #revokeSignedInAs(tokenId: string, now: number): GrantRow[] {
    this.#signins.removeFor(tokenId);
    const grants = this.#grants.activeSignedInAs(tokenId);
    for (const grant of grants) this.#grants.revoke(grant.id, now);
    return grants;
  }

  // --- OAuth grants ---

  async createGrant(
    row: Omit<GrantRow, "id" | "createdAt" | "lastUsedAt" | "lastRefreshedAt" | "revokedAt">,
  ): Promise<GrantRow> {
    const grant: GrantRow = {
      ...row,
      id: `${GRANT_PREFIX}${randomHex(8)}`,
      createdAt: Date.now(),
      lastUsedAt: null,
      lastRefreshedAt: null,
      revokedAt: null,
    };
    this.#grants.insert(grant);
    this.#log.info("grant created", {
      grant: grant.id,
      client: grant.clientId,
      scopes: grant.scopes.join(","),
    });
    return grant;
  }

  async setOauthGrant(grantId: string, oauthGrantId: string): Promise<void> {
    this.#grants.setOauthGrant(grantId, oauthGrantId);
  }

  /** A grant by id, noting its use (for listings' last_used_at). */
  async lookupGrant(grantId: string): Promise<GrantMatch | null> {
    const row = this.#grants.byId(grantId);
    if (!row) return null;
    const now = Date.now();
    const status = grantStatus(row, now);
    if (status === "active" && (row.lastUsedAt === null || now - row.lastUsedAt >= TOUCH_EVERY_MS)) {
      this.#grants.touch(row.id, now);
    }
    return { grantId: row.id, scopes: row.scopes, status, clientId: row.clientId };
  }

  async listGrants(): Promise<GrantInfo[]> {
    const now = Date.now();
    return this.#grants.list().map((row) => grantInfo(row, now));
  }

  /** Revokes a grant; its row (for its OAuth tokens to be revoked too). */
  async revokeGrant(grantId: string): Promise<Result<GrantRow>> {
    const row = this.#grants.byId(grantId);
    if (!row) return fail("not_found", `no grant ${grantId}`);
    this.#grants.revoke(grantId, Date.now());
    this.#log.info("grant revoked", { grant: grantId, client: row.clientId });
    return ok(this.#grants.byId(grantId) ?? row);
  }

  /** Revokes the grants of a library grant (a refresh token was replayed); their rows. */
  async revokeOauthGrant(oauthGrantId: string): Promise<GrantRow[]> {
    const now = Date.now();
    const rows = this.#grants.byOauthGrant(oauthGrantId).filter((row) => row.revokedAt === null);
    for (const row of rows) this.#grants.revoke(row.id, now);
    return rows;
  }

  /** Revokes the active grants signed in as `tokenId` that are not in `live` (the library replaced them). */
  async revokeReplacedGrants(tokenId: string, live: string[]): Promise<void> {
    const now = Date.now();
    for (const row of this.#grants.activeSignedInAs(tokenId)) {
      if (!live.includes(row.id)) this.#grants.revoke(row.id, now);
    }
  }

  /** Notes a refresh token's use (by its hash): false when it was used before. */
  async useRefreshToken(
    sha256: string,
    oauthGrantId: string,
  ): Promise<{ fresh: boolean; grants: { grantId: string; clientId: string }[] }> {
    const now = Date.now();
    const fresh = this.#grants.useRefreshToken(sha256, oauthGrantId, now);
    if (fresh) this.#grants.refreshed(oauthGrantId, now);
    const grants = this.#grants
      .byOauthGrant(oauthGrantId)
      .map((row) => ({ grantId: row.id, clientId: row.clientId }));
    return { fresh, grants };
  }

  // --- browser sign-ins to the authorization page ---

  async createSignin(sha256: string, row: SigninRow): Promise<void> {
    this.#signins.insert(sha256, row, Date.now());
  }

  async signin(sha256: string): Promise<SigninRow | null> {
    return this.#signins.get(sha256, Date.now());
  }

  async endSignin(sha256: string): Promise<void> {
    this.#signins.remove(sha256);
  }

  /** Revokes the active host token(s) of a host; returns their ids. */
  async revokeHost(hostId: string): Promise<string[]> {
    const now = Date.now();
    const active = this.#store.activeForHost(hostId, now);
    for (const row of active) this.#store.revoke(row.id, now);
    return active.map((row) => row.id);
  }

  /**
   * Revokes every token and grant scoped to a project (it was deleted): how many tokens, and the
   * grants' rows (for their OAuth tokens to be revoked too). A grant that also holds other scopes
   * goes too: a grant is revoked whole.
   */
  async revokeProject(projectId: string): Promise<{ tokens: number; grants: GrantRow[] }> {
    const now = Date.now();
    const rows = this.#store.withProjectScope(projectId).filter((row) => statusOf(row, now) === "active");
    for (const row of rows) this.#store.revoke(row.id, now);
    const scoped = (scope: string) => scope === `project:${projectId}` || scope === `project:${projectId}:ro`;
    const grants = this.#grants.list().filter((row) => row.revokedAt === null && row.scopes.some(scoped));
    for (const grant of grants) this.#grants.revoke(grant.id, now);
    return { tokens: rows.length, grants };
  }
}
